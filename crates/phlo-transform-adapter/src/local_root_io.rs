//! Iceberg file IO for tables Trino writes on its native local file system: their metadata,
//! manifest lists, manifests and data files are named `local:///<path>`, a path under the
//! catalog's `local.location` (`local_root`). [`file_io`] reads them there (and plain
//! `file://` paths as they are). It only reads: every write or delete is refused.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use iceberg::io::{
    FileIO, FileIOBuilder, FileMetadata, FileRead, FileWrite, InputFile, LocalFsStorage,
    OutputFile, Storage, StorageConfig, StorageFactory,
};
use iceberg::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A read-only file IO resolving `local://` locations under `root`.
pub(crate) fn file_io(root: &Path) -> FileIO {
    FileIOBuilder::new(Arc::new(LocalRootFactory {
        root: root.to_path_buf(),
    }))
    .build()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LocalRootFactory {
    root: PathBuf,
}

#[typetag::serde]
impl StorageFactory for LocalRootFactory {
    fn build(&self, _config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(LocalRootStorage {
            root: self.root.clone(),
        }))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LocalRootStorage {
    root: PathBuf,
}

impl LocalRootStorage {
    /// The file `location` names: `local:///a/b` is `<root>/a/b` (never leaving the root).
    fn path(&self, location: &str) -> Result<String> {
        let Some(rest) = location.strip_prefix("local://") else {
            return Ok(location.to_string());
        };
        let relative = Path::new(rest.trim_start_matches('/'));
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(Error::new(
                ErrorKind::DataInvalid,
                format!("`{location}` leaves the local root"),
            ));
        }
        Ok(self.root.join(relative).to_string_lossy().into_owned())
    }

    fn read_only(location: &str) -> Error {
        Error::new(
            ErrorKind::FeatureUnsupported,
            format!("`{location}`: Trino's local tables are only read here"),
        )
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for LocalRootStorage {
    async fn exists(&self, path: &str) -> Result<bool> {
        LocalFsStorage.exists(&self.path(path)?).await
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        LocalFsStorage.metadata(&self.path(path)?).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        LocalFsStorage.read(&self.path(path)?).await
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        LocalFsStorage.reader(&self.path(path)?).await
    }

    async fn write(&self, path: &str, _bs: Bytes) -> Result<()> {
        Err(Self::read_only(path))
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn FileWrite>> {
        Err(Self::read_only(path))
    }

    async fn delete(&self, path: &str) -> Result<()> {
        Err(Self::read_only(path))
    }

    async fn delete_prefix(&self, path: &str) -> Result<()> {
        Err(Self::read_only(path))
    }

    async fn delete_stream(&self, _paths: BoxStream<'static, String>) -> Result<()> {
        Err(Self::read_only("a list of files"))
    }

    fn new_input(&self, path: &str) -> Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> Result<OutputFile> {
        Err(Self::read_only(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_locations_resolve_under_the_root_and_never_leave_it() {
        let s = LocalRootStorage {
            root: PathBuf::from("/srv/warehouse"),
        };
        assert_eq!(
            s.path("local:///iceberg/s/t/metadata/a.avro").unwrap(),
            "/srv/warehouse/iceberg/s/t/metadata/a.avro"
        );
        assert_eq!(s.path("file:///x/y").unwrap(), "file:///x/y");
        assert!(s.path("local:///iceberg/../../etc/passwd").is_err());
    }
}
