//! Renaming a model: its file moves to the path the new name gives, and every relation that
//! reads it is rewritten to the new name. Refused when the result would be ambiguous.

use phlo_transform_compiler::Compilation;

use crate::navigation::{readers, FileRange};
use crate::position::Position;
use crate::symbol::{symbol_at, Dataset, Symbol};

/// What a model rename changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenameEdits {
    /// The model file's path now and after (workspace-relative).
    pub from: String,
    pub to: String,
    /// Each relation reading the model, and the text it becomes.
    pub edits: Vec<(FileRange, String)>,
}

/// Renames the model whose name stands at `p` of file `rel` (a relation that reads it, or
/// its name written out) to `new_name`, as [`rename_model`] does.
pub fn rename_at(
    c: &Compilation,
    rel: &str,
    p: Position,
    new_name: &str,
) -> Result<RenameEdits, String> {
    match symbol_at(c, rel, p) {
        Some((Symbol::Dataset(Dataset::Model(i)), _)) => rename_model(c, i, new_name),
        _ => Err("only a model can be renamed: put the cursor on a relation that reads one".into()),
    }
}

/// Renames model `index` to `new_name`. Refused (with the reason) when the name is not valid,
/// already taken, its namespace is not exactly one folder of the workspace, or its file would
/// land on an existing file.
pub fn rename_model(c: &Compilation, index: usize, new_name: &str) -> Result<RenameEdits, String> {
    let new_name = new_name.trim().to_lowercase();
    phlo_transform_core::check_name(&new_name)?;
    let (namespace, inner) = new_name.split_once('.').ok_or_else(|| {
        format!("`{new_name}` has no namespace: write it as `<namespace>.<name>`")
    })?;
    if c.model_index(&new_name).is_some() {
        return Err(format!("a model named `{new_name}` already exists"));
    }
    let roots: Vec<_> = c
        .workspace
        .roots
        .iter()
        .filter(|r| r.namespace == namespace)
        .collect();
    let root = match roots.as_slice() {
        [root] => root,
        [] => {
            return Err(format!(
                "no folder of the workspace is namespace `{namespace}`"
            ))
        }
        _ => {
            return Err(format!(
                "namespace `{namespace}` is several folders: move the file by hand"
            ))
        }
    };
    let to = format!("{}/{}.sql", root.path, inner.replace('.', "/"));
    if c.workspace.root.join(&to).exists() {
        return Err(format!("`{to}` already exists"));
    }
    let edits = readers(c, &Dataset::Model(index))
        .into_iter()
        .map(|r| (r, new_name.clone()))
        .collect();
    Ok(RenameEdits {
        from: c.models[index].path.clone(),
        to,
        edits,
    })
}
