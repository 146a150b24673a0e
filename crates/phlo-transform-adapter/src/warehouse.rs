//! The local warehouse root and the only way to get a path in it. Names are never paths: every
//! path the local engine writes or deletes is a [`WarehousePath`], which exists only once the
//! model name obeyed the identifier rule and the path was proven to be a direct child of the
//! warehouse root that is not a symbolic link leading elsewhere.

use phlo_transform_core::diagnostic::codes;
use std::path::{Component, Path, PathBuf};

use crate::error::err;
use crate::AdapterError;

/// `.phlo/warehouse/` of a workspace.
#[derive(Clone, Debug)]
pub struct Warehouse {
    root: PathBuf,
}

/// A path proven inside the warehouse root (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarehousePath(PathBuf);

impl WarehousePath {
    pub fn as_path(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for WarehousePath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for WarehousePath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Warehouse {
    pub fn new(root: &Path) -> Self {
        Warehouse {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The Delta table directory of `model`: `<root>/<model>`.
    pub fn table(&self, model: &str) -> Result<WarehousePath, AdapterError> {
        self.child(model, model.to_string())
    }

    /// The stored definition of the view `model`: `<root>/<model>.view.json`.
    pub fn view(&self, model: &str) -> Result<WarehousePath, AdapterError> {
        self.child(model, format!("{model}.view.json"))
    }

    fn child(&self, model: &str, file_name: String) -> Result<WarehousePath, AdapterError> {
        let outside = |why: String| {
            err(
                codes::PATH_OUTSIDE_WAREHOUSE,
                format!(
                    "refusing to touch `{}` for model `{model}`: {why}",
                    self.root.join(&file_name).display()
                ),
            )
        };
        phlo_transform_core::check_name(model).map_err(outside)?;
        let path = self.root.join(&file_name);
        // Lexically: exactly the root plus one plain component.
        let below = path
            .strip_prefix(&self.root)
            .map_err(|_| outside("the path is not below the warehouse root".to_string()))?;
        let mut components = below.components();
        if !matches!(
            (components.next(), components.next()),
            (Some(Component::Normal(_)), None)
        ) {
            return Err(outside(
                "the path is not a direct child of the warehouse root".to_string(),
            ));
        }
        // Physically: an existing entry must not be a link leading out of the root.
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.file_type().is_symlink() {
                return Err(outside(
                    "it is a symbolic link; the warehouse only holds what phlo-transform wrote"
                        .to_string(),
                ));
            }
        }
        Ok(WarehousePath(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_children_named_by_valid_names() {
        let w = Warehouse::new(Path::new("/ws/.phlo/warehouse"));
        assert_eq!(
            w.table("lab.results").unwrap().as_path(),
            Path::new("/ws/.phlo/warehouse/lab.results")
        );
        assert_eq!(
            w.view("lab.v").unwrap().as_path(),
            Path::new("/ws/.phlo/warehouse/lab.v.view.json")
        );
        for bad in ["../x.t", "/abs.t", "..", "a/b", "", "x..t", "C:\\t"] {
            let e = w.table(bad).unwrap_err();
            assert_eq!(e.code, codes::PATH_OUTSIDE_WAREHOUSE, "{bad}");
            assert!(w.view(bad).is_err(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_in_the_warehouse_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let root = dir.path().join("warehouse");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("lab.t")).unwrap();
        let e = Warehouse::new(&root).table("lab.t").unwrap_err();
        assert_eq!(e.code, codes::PATH_OUTSIDE_WAREHOUSE);
    }
}
