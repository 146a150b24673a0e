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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    ExitCode::from(runtime.block_on(cli::dispatch(args)))
}
