//! Order-preserving parallel map over scoped threads (one per core): compiling is CPU-bound
//! and per-model work is independent within a phase.

/// Stack of each compiler thread: typing a model recurses over its plan (as deep as
/// `phlo_transform_sql::depth::MAX_NESTING` allows), like the command line's own threads
/// (reserved address space, not committed memory).
const STACK: usize = 64 << 20;

/// `items.map(f)`, computed on up to `available_parallelism` threads, results in input order.
pub(crate) fn map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    map_chunks(items, |chunk| chunk.into_iter().map(&f).collect())
}

/// Splits `items` into one contiguous chunk per thread and concatenates what `f` makes of
/// each, in order. For work with a per-thread set-up cost (a planning session).
pub(crate) fn map_chunks<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(Vec<T>) -> Vec<R> + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if threads <= 1 || items.len() < 64 {
        return f(items);
    }
    let per_chunk = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut items = items.into_iter();
    loop {
        let chunk: Vec<T> = items.by_ref().take(per_chunk).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(scope, move || f(chunk))
                    .expect("a compiler thread starts")
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("compiler threads do not panic"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let out = super::map((0..1000).collect(), |x: i32| x * 2);
        assert_eq!(out, (0..1000).map(|x| x * 2).collect::<Vec<_>>());
    }
}
