//! stdin and stdout as the async reader and writer rmcp's transport takes. Tokio's own
//! stdio needs its `io-std` feature, which would rebuild tokio and everything above it with
//! another feature set; two threads copying through in-memory pipes cost nothing instead.
//! The pipes are duplex streams, not simplex ones: dropping one end of a duplex stream is
//! end-of-file at the other, which is how a closed stdin ends the session and the session's
//! end ends the copy to stdout.

use std::io::{Read, Write};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// Bytes buffered each way.
const PIPE: usize = 64 * 1024;

/// The reader (stdin) and writer (stdout) halves rmcp serves on, and the thread copying to
/// stdout: it ends, with everything written flushed, once the service drops its writer.
pub fn bridge(
    runtime: tokio::runtime::Handle,
) -> std::io::Result<((DuplexStream, DuplexStream), std::thread::JoinHandle<()>)> {
    let (input, mut to_input) = tokio::io::duplex(PIPE);
    let (mut from_output, output) = tokio::io::duplex(PIPE);
    let reading = runtime.clone();
    std::thread::Builder::new()
        .name("phlo-mcp-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = vec![0u8; PIPE];
            // EOF or a closed service ends the copy; dropping the writer is the reader's EOF.
            while let Ok(n @ 1..) = stdin.read(&mut buf) {
                if reading.block_on(to_input.write_all(&buf[..n])).is_err() {
                    break;
                }
            }
        })?;
    let writer = std::thread::Builder::new()
        .name("phlo-mcp-stdout".into())
        .spawn(move || {
            let mut stdout = std::io::stdout().lock();
            let mut buf = vec![0u8; PIPE];
            while let Ok(n @ 1..) = runtime.block_on(from_output.read(&mut buf)) {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|_| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
        })?;
    Ok(((input, output), writer))
}
