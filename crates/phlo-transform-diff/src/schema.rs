//! The schema difference of two sides, and how their columns line up for comparison.
//!
//! Both sides are projected onto one *aligned* schema: the key columns, then the compared
//! columns, each cast to a type both sides' values compare in (DataFusion's comparison
//! coercion, so `Int32` against `Int64` compares as `Int64`). Columns are named by the base
//! side; `column_map` renames candidate columns onto base names.

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::sync::Arc;

use crate::options::DiffOptions;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SchemaDiff {
    /// Columns only the candidate has.
    pub added: Vec<ColumnType>,
    /// Columns only the base has.
    pub removed: Vec<ColumnType>,
    /// Columns on both sides with another type.
    pub retyped: Vec<Retyped>,
    /// Columns on both sides whose nullability changed.
    pub nullability: Vec<NullabilityChange>,
    /// Candidate columns compared under another base name (`--map`).
    pub renamed: Vec<Renamed>,
}

impl SchemaDiff {
    /// The difference of two schemas alone: no key, no renames, no values compared (a branch
    /// diff's schema and nullability changes; an added or removed table is all its columns).
    pub fn between(base: &Schema, candidate: &Schema) -> SchemaDiff {
        Alignment::new(base, candidate, &DiffOptions::default())
            .map(|a| a.schema_diff)
            .expect("without key, map, exclusions or tolerances nothing can be missing")
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.retyped.is_empty()
            && self.nullability.is_empty()
            && self.renamed.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ColumnType {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: String,
    pub nullable: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Retyped {
    pub name: String,
    pub base: String,
    pub candidate: String,
    /// The type values are compared in; `None`: not comparable, values not compared.
    pub compared_as: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NullabilityChange {
    pub name: String,
    pub base: bool,
    pub candidate: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Renamed {
    pub base: String,
    pub candidate: String,
}

/// One column of the aligned schema.
#[derive(Clone, Debug)]
pub struct AlignedColumn {
    /// Base name.
    pub name: String,
    pub base_index: usize,
    pub candidate_index: usize,
    pub data_type: DataType,
    /// Absolute tolerance (floating-point columns only).
    pub tolerance: Option<f64>,
}

/// How both sides' batches are projected for the comparison.
#[derive(Clone, Debug)]
pub struct Alignment {
    pub key: Vec<AlignedColumn>,
    pub compared: Vec<AlignedColumn>,
    pub schema: SchemaRef,
    pub schema_diff: SchemaDiff,
    /// Columns on both sides left out of the comparison, with why (D003 warnings).
    pub warnings: Vec<Diagnostic>,
}

/// Which side of a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Base,
    Candidate,
}

impl Alignment {
    pub fn new(base: &Schema, candidate: &Schema, opts: &DiffOptions) -> Result<Self, Diagnostic> {
        let to_base = |cand: &str| -> String {
            opts.column_map
                .get(cand)
                .cloned()
                .unwrap_or_else(|| cand.to_string())
        };
        for (cand, base_name) in &opts.column_map {
            if candidate.index_of(cand).is_err() {
                return Err(missing(cand, "candidate", candidate, "--map"));
            }
            if base.index_of(base_name).is_err() {
                return Err(missing(base_name, "base", base, "--map"));
            }
        }
        // Candidate column name for each base column present on both sides.
        let cand_of = |base_name: &str| -> Option<(usize, &Field)> {
            candidate
                .fields()
                .iter()
                .enumerate()
                .find(|(_, f)| to_base(f.name()) == base_name)
                .map(|(i, f)| (i, f.as_ref()))
        };
        let mut schema_diff = SchemaDiff::default();
        for (cand, base_name) in &opts.column_map {
            schema_diff.renamed.push(Renamed {
                base: base_name.clone(),
                candidate: cand.clone(),
            });
        }
        let mut warnings = Vec::new();
        let mut key = Vec::new();
        for k in &opts.key {
            let bi = base
                .index_of(k)
                .map_err(|_| missing(k, "base", base, "--key"))?;
            let (ci, cf) = cand_of(k).ok_or_else(|| missing(k, "candidate", candidate, "--key"))?;
            let bt = base.field(bi).data_type();
            let data_type = comparison_coercion(bt, cf.data_type()).ok_or_else(|| {
                Diagnostic::error(
                    codes::DIFF_INCOMPATIBLE_TYPES,
                    format!(
                        "key column `{k}` is {bt} on the base side and {} on the candidate side: the keys cannot be matched",
                        cf.data_type()
                    ),
                )
                .with_help("cast the column in the model, or diff on another --key")
            })?;
            key.push(AlignedColumn {
                name: k.clone(),
                base_index: bi,
                candidate_index: ci,
                data_type,
                tolerance: None,
            });
        }
        let mut compared = Vec::new();
        for (bi, bf) in base.fields().iter().enumerate() {
            let name = bf.name();
            let Some((ci, cf)) = cand_of(name) else {
                schema_diff.removed.push(column_type(bf));
                continue;
            };
            let common = comparison_coercion(bf.data_type(), cf.data_type());
            if logical(bf.data_type()) != logical(cf.data_type()) {
                schema_diff.retyped.push(Retyped {
                    name: name.clone(),
                    base: bf.data_type().to_string(),
                    candidate: cf.data_type().to_string(),
                    compared_as: common.as_ref().map(|t| t.to_string()),
                });
            }
            if bf.is_nullable() != cf.is_nullable() {
                schema_diff.nullability.push(NullabilityChange {
                    name: name.clone(),
                    base: bf.is_nullable(),
                    candidate: cf.is_nullable(),
                });
            }
            if opts.key.iter().any(|k| k == name) || opts.exclude.iter().any(|e| e == name) {
                continue;
            }
            let Some(data_type) = common else {
                warnings.push(
                    Diagnostic::warning(
                        codes::DIFF_INCOMPATIBLE_TYPES,
                        format!(
                            "column `{name}` is {} on the base side and {} on the candidate side: its values are not compared",
                            bf.data_type(),
                            cf.data_type()
                        ),
                    )
                    .with_help("the schema difference lists it as retyped; --exclude it to silence this"),
                );
                continue;
            };
            let tolerance = is_float(&data_type)
                .then(|| opts.float_tolerance(name))
                .flatten();
            compared.push(AlignedColumn {
                name: name.clone(),
                base_index: bi,
                candidate_index: ci,
                data_type,
                tolerance,
            });
        }
        for cf in candidate.fields() {
            if base.index_of(&to_base(cf.name())).is_err() {
                schema_diff.added.push(column_type(cf));
            }
        }
        for e in &opts.exclude {
            if base.index_of(e).is_err() {
                return Err(missing(e, "base", base, "--exclude"));
            }
        }
        for t in opts.tolerances.keys() {
            if base.index_of(t).is_err() {
                return Err(missing(t, "base", base, "a column tolerance"));
            }
        }
        let fields: Vec<Field> = key
            .iter()
            .chain(&compared)
            .map(|c| Field::new(&c.name, c.data_type.clone(), true))
            .collect();
        Ok(Alignment {
            key,
            compared,
            schema: Arc::new(Schema::new(fields)),
            schema_diff,
            warnings,
        })
    }

    /// Projects and casts one side's batch onto the aligned schema.
    pub fn project(&self, batch: &RecordBatch, side: Side) -> Result<RecordBatch, Diagnostic> {
        let columns = self
            .key
            .iter()
            .chain(&self.compared)
            .map(|c| {
                let index = match side {
                    Side::Base => c.base_index,
                    Side::Candidate => c.candidate_index,
                };
                let array = batch.column(index);
                if array.data_type() == &c.data_type {
                    Ok(array.clone())
                } else {
                    cast(array, &c.data_type).map_err(|e| {
                        Diagnostic::error(
                            codes::DIFF_INCOMPATIBLE_TYPES,
                            format!(
                                "column `{}` cannot be compared as {}: {e}",
                                c.name, c.data_type
                            ),
                        )
                        .with_help("--exclude the column, or cast it in the model")
                    })
                }
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| {
            Diagnostic::error(
                codes::DIFF_UNREADABLE_SIDE,
                format!("aligning a batch: {e}"),
            )
        })
    }
}

/// The type without its physical encoding: string, binary and list encodings (`Utf8View`,
/// `LargeUtf8`, dictionaries, …) are one type for the schema difference. Engines pick
/// encodings freely (Delta reads back `Utf8View` what a query produced as `Utf8`).
fn logical(t: &DataType) -> DataType {
    match t {
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::Dictionary(_, value) => logical(value),
        other => other.clone(),
    }
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

fn column_type(f: &Field) -> ColumnType {
    ColumnType {
        name: f.name().clone(),
        data_type: f.data_type().to_string(),
        nullable: f.is_nullable(),
    }
}

fn missing(column: &str, side: &str, schema: &Schema, what: &str) -> Diagnostic {
    let names = schema.fields().iter().map(|f| f.name().as_str());
    Diagnostic::error(
        codes::DIFF_KEY_MISSING,
        format!("column `{column}` ({what}) does not exist on the {side} side"),
    )
    .with_suggestions(phlo_transform_core::did_you_mean(column, names))
    .with_help(format!(
        "the {side} side has: {}",
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
