//! A `phlo-transform daemon` process for the tests and the benchmark: started on a free
//! loopback port, its address read from its first line, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub struct DaemonProcess {
    pub child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl DaemonProcess {
    /// `bin -C root daemon --listen 127.0.0.1:0 <extra>`, the state and token taken from
    /// the arguments only.
    pub fn start(bin: &Path, root: &Path, extra: &[&str]) -> DaemonProcess {
        let mut child = Command::new(bin)
            .arg("-C")
            .arg(root)
            .args(["daemon", "--listen", "127.0.0.1:0"])
            .args(extra)
            .env_remove("PHLO_STATE_URL")
            .env_remove("PHLO_DAEMON_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("the daemon did not say where it listens: {line:?}"))
            .to_string();
        DaemonProcess { child, addr }
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
