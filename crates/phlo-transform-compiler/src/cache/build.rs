//! What identifies the compiler that computed a cache entry. Entries are shared between
//! machines (a team's directory, the PostgreSQL state store), so the identity is the content
//! of the running executable, not its path or modification time: the same release binary on
//! a laptop and in CI reads the same entries, and any other build (another version, a
//! development build, other built-in dialects) reads none of them.
//!
//! On Linux the linker has already hashed the executable: its GNU build-id note (a SHA-1 of
//! the linked output) is read from the program headers, a few hundred bytes. Elsewhere, or
//! without the note, the whole file is hashed (~0.3 s for a release binary).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::OnceLock;

/// The build's identity: the crate version and a digest of the running executable.
pub(super) fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let digest = std::env::current_exe()
            .ok()
            .and_then(|exe| executable_digest(&exe))
            .unwrap_or_default();
        format!("{} {digest}", env!("CARGO_PKG_VERSION"))
    })
}

/// The short name a build's packs are stored under.
pub(super) fn build_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| phlo_transform_core::hash::sha256_hex(build_id())[..16].to_string())
}

fn executable_digest(exe: &Path) -> Option<String> {
    let mut file = std::fs::File::open(exe).ok()?;
    if let Some(id) = gnu_build_id(&mut file) {
        return Some(format!("build-id:{}", hex::encode(id)));
    }
    phlo_transform_core::hash::sha256_file(exe).ok()
}

/// `NT_GNU_BUILD_ID` in a little-endian 64-bit ELF file's `PT_NOTE` segments.
fn gnu_build_id(file: &mut (impl Read + Seek)) -> Option<Vec<u8>> {
    const PT_NOTE: u32 = 4;
    const NT_GNU_BUILD_ID: u32 = 3;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 0x20),
        usize::from(u16_at(&header, 0x36)),
        usize::from(u16_at(&header, 0x38)),
    );
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut phdrs = vec![0u8; phentsize * phnum];
    file.seek(SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut phdrs).ok()?;
    for ph in phdrs.chunks_exact(phentsize) {
        let (offset, size) = (u64_at(ph, 8), u64_at(ph, 32));
        if u32_at(ph, 0) != PT_NOTE || size > 1 << 16 {
            continue;
        }
        let mut notes = vec![0u8; usize::try_from(size).ok()?];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut notes).ok()?;
        let mut at = 0;
        while at + 12 <= notes.len() {
            let namesz = u32_at(&notes, at) as usize;
            let descsz = u32_at(&notes, at + 4) as usize;
            let kind = u32_at(&notes, at + 8);
            let name_at = at + 12;
            let desc_at = name_at + namesz.div_ceil(4) * 4;
            let end = desc_at + descsz.div_ceil(4) * 4;
            if desc_at + descsz > notes.len() {
                break;
            }
            if kind == NT_GNU_BUILD_ID && &notes[name_at..name_at + namesz] == b"GNU\0" {
                return Some(notes[desc_at..desc_at + descsz].to_vec()).filter(|d| !d.is_empty());
            }
            at = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_running_executable_has_a_build_id_on_linux() {
        let exe = std::env::current_exe().unwrap();
        let id = super::gnu_build_id(&mut std::fs::File::open(&exe).unwrap());
        if cfg!(target_os = "linux") {
            assert!(id.is_some_and(|id| id.len() >= 16));
        }
        // Not an ELF file: none, and the caller hashes the file instead.
        let mut text = std::io::Cursor::new(b"#!/bin/sh\necho hi\n".repeat(8));
        assert_eq!(super::gnu_build_id(&mut text), None);
    }
}
