//! Order-preserving parallel map over scoped threads (one per core), for CPU-bound work in
//! independent items: the compiler's per-model phases, the data diff's key packing.

/// Stack of each thread: typing a model recurses over its plan (as deep as
/// `phlo_transform_sql::depth::MAX_NESTING` allows), like the command line's own threads
/// (reserved address space, not committed memory).
const STACK: usize = 64 << 20;

use std::sync::{Mutex, PoisonError};

/// `items.map(f)`, computed on up to `available_parallelism` threads, results in input order;
/// on the calling thread when there are fewer than `min_items` (threads cost more than the
/// work of a few).
pub fn map<T: Send, R: Send>(items: Vec<T>, min_items: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    map_with(items, min_items, || (), |_, item| f(item))
}

/// `items.map(f)` with a state per thread made by `init` (for work with a per-thread set-up
/// cost, such as a planning session), results in input order. Each thread takes the next item
/// when it has finished one: models differ a lot in cost and sit sorted by namespace, so
/// contiguous halves left one core idle while the other finished the costlier half.
pub fn map_with<T: Send, S, R: Send>(
    items: Vec<T>,
    min_items: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if threads <= 1 || items.len() < min_items.max(2) {
        let mut state = init();
        return items.into_iter().map(|item| f(&mut state, item)).collect();
    }
    let len = items.len();
    let queue = Mutex::new(items.into_iter().enumerate());
    let (queue, init, f) = (&queue, &init, &f);
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(len).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.min(len))
            .map(|_| {
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(scope, move || {
                        let mut state = init();
                        let mut done = Vec::new();
                        loop {
                            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
                            let Some((index, item)) = next else {
                                return done;
                            };
                            done.push((index, f(&mut state, item)));
                        }
                    })
                    .expect("a worker thread starts")
            })
            .collect();
        for handle in handles {
            for (index, result) in handle.join().expect("worker threads do not panic") {
                out[index] = Some(result);
            }
        }
    });
    out.into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let out = super::map((0..1000).collect(), 2, |x: i32| x * 2);
        assert_eq!(out, (0..1000).map(|x| x * 2).collect::<Vec<_>>());
    }
}
