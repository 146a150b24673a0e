//! Stable fingerprints: sha256 over length-prefixed fields, so that no two different field
//! sequences can produce the same byte stream (decision 5: never `std::hash::Hash`).

use sha2::{Digest, Sha256};

/// Builder of a sha256 fingerprint over named, length-prefixed fields.
#[derive(Clone, Default)]
pub struct Fingerprint {
    hasher: Sha256,
}

impl Fingerprint {
    pub fn new(domain: &str) -> Self {
        let mut f = Fingerprint::default();
        f.field("domain", domain.as_bytes());
        f
    }

    pub fn field(&mut self, name: &str, value: impl AsRef<[u8]>) -> &mut Self {
        let value = value.as_ref();
        for part in [name.as_bytes(), value] {
            self.hasher.update((part.len() as u64).to_le_bytes());
            self.hasher.update(part);
        }
        self
    }

    /// Lower-case hex sha256.
    pub fn finish(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
    }
}

/// sha256 of raw bytes, hex.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// sha256 of a file's content, streamed.
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_prefix_separates_fields() {
        let a = Fingerprint::new("t")
            .field("x", "ab")
            .field("y", "c")
            .finish();
        let b = Fingerprint::new("t")
            .field("x", "a")
            .field("y", "bc")
            .finish();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
    }
}
