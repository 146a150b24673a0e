//! `phlo-transform`: the command line. A thin shell over the library crates: load the
//! workspace, compile, plan, execute; every report exists first as a serialisable struct.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Behave like other Unix tools when the reader goes away (`phlo-transform plan | head`).
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Cli::parse();
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
