//! SQL as the compiler sees it: parsed with the sqlparser DataFusion re-exports (decision 1),
//! relations found and rewritten on the AST (decision 4), canonical text for versions
//! (decision 5) and the restricted `ref`/`source`/`var` templating (SPEC §94–96).

pub mod canonical;
pub mod depth;
pub mod dialects;
pub mod parse;
pub mod relations;
pub mod template;

pub use datafusion::sql::sqlparser;
pub use parse::{parse_query, ParsedQuery};
pub use relations::{extract_relations, rewrite_relations, RelationRef, Replacement};
