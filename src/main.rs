//! `phlo-transform`: the command line. A thin shell over the library crates: load the
//! workspace, compile, plan, execute; every report exists first as a serialisable struct.

/// mimalloc keeps freed memory for reuse where glibc's malloc unmaps every large Arrow buffer
/// and faults fresh zeroed pages in for the next one (issue 15: `diff --full` 15 % faster).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every line the CLI prints goes through these instead of std's macros (they shadow them in
/// every module below): the text is scrubbed of secrets (`phlo_transform_core::secrets`), and
/// a failed write (a closed pipe, a full disk) is ignored instead of panicking mid-run.
macro_rules! println {
    () => {
        $crate::emit(&mut ::std::io::stdout(), String::new(), true)
    };
    ($($arg:tt)*) => {
        $crate::emit(&mut ::std::io::stdout(), format!($($arg)*), true)
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::emit(&mut ::std::io::stdout(), format!($($arg)*), false)
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::emit(&mut ::std::io::stderr(), format!($($arg)*), false)
    };
}
macro_rules! eprintln {
    () => {
        $crate::emit(&mut ::std::io::stderr(), String::new(), true)
    };
    ($($arg:tt)*) => {
        $crate::emit(&mut ::std::io::stderr(), format!($($arg)*), true)
    };
}

mod cli;

/// Writes `text` (and a newline) to `out` scrubbed of secrets; errors are dropped on purpose:
/// the run's outcome is recorded in the state store, which does not depend on a terminal.
fn emit(out: &mut dyn std::io::Write, text: String, newline: bool) {
    let mut text = phlo_transform_core::secrets::scrub(&text);
    if newline {
        text.push('\n');
    }
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Turns transparent huge pages off for this process. mimalloc asks for them on its arenas,
/// so the first touch of any fresh 2 MiB region zeroes all of it; the Delta log reader
/// allocates a 3 MiB decoding tape per log file it reads and touches a few KiB of it. In a
/// first `run` of 1,000 models that zeroing was 8 % of the CPU (a quarter of the system time);
/// without huge pages the same runs took 0.4–0.7 s less CPU, and `check` at 10,000 models half
/// its system time. Linux only; elsewhere nothing to do.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A reader that goes away (`phlo-transform run | head`) makes writes fail (EPIPE), which
    // `emit` ignores: the process is not killed mid-run, so the run is still recorded as it
    // ends. (Rust's runtime already ignores SIGPIPE; this says so explicitly.)
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let args = cli::Cli::parse();
    if !args.wants_huge_pages() {
        disable_transparent_huge_pages();
    }
    // Views are inlined into the plans that read them, so a deep chain of views is a deep
    // DataFusion plan, and planning it recurses: the default 2 MiB worker stacks overflow on
    // a 10-level chain in a debug build. Every thread that plans gets 64 MiB (reserved, not
    // committed, memory).
    const STACK: usize = 64 << 20;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STACK)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let main = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || runtime.block_on(cli::dispatch(args)));
    match main.map(|t| t.join()) {
        Ok(Ok(code)) => ExitCode::from(code),
        _ => {
            eprintln!("error[E002]: phlo-transform stopped unexpectedly; this is a bug");
            ExitCode::from(2)
        }
    }
}
