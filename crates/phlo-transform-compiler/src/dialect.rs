//! Dialects are data (decision 6): `dialects/<name>.toml` declares a warehouse's type names and
//! function signatures. Each function is registered in the typing session as a DataFusion UDF
//! that only computes its return type — it can be planned, never executed — so models that
//! call warehouse functions type-check without a warehouse. A name declared several times is
//! one function with overloads, tried in the order declared (PostgreSQL's `round(double)` and
//! `round(numeric, integer)`).

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{not_impl_err, plan_err, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use serde::Deserialize;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::semantics::Semantics;

/// The dialect files shipped in the binary.
const BUILTIN: &[(&str, &str)] = &[
    ("trino", include_str!("../../../dialects/trino.toml")),
    ("duckdb", include_str!("../../../dialects/duckdb.toml")),
    ("postgres", include_str!("../../../dialects/postgres.toml")),
];

/// Names accepted by `[transform] dialect`.
pub fn known_dialects() -> Vec<&'static str> {
    std::iter::once("datafusion")
        .chain(BUILTIN.iter().map(|(n, _)| *n))
        .collect()
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DialectFile {
    name: String,
    /// Dialect type name → a name of the common vocabulary (`crate::types::sql_type`).
    #[serde(default)]
    types: BTreeMap<String, String>,
    #[serde(default, rename = "function")]
    functions: Vec<FunctionDecl>,
    #[serde(default)]
    semantics: Semantics,
}

/// One declared function.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct FunctionDecl {
    pub name: String,
    /// `scalar` (default) or `aggregate`.
    #[serde(default = "scalar")]
    pub kind: String,
    /// Argument types: type names, `any`, `numeric`, `decimal` (a DECIMAL, or an integer the
    /// target widens to one; never a float), `string`, `array`.
    pub args: Vec<String>,
    /// Trailing arguments that may be left out.
    #[serde(default)]
    pub optional: usize,
    /// The last argument repeats.
    #[serde(default)]
    pub variadic: bool,
    /// A type name, `array(<type>)`, or `arg1`, `arg2`… (the type of that argument).
    pub returns: String,
    /// An expression using the function over the test table (see `dialect_tests`).
    pub example: String,
}

fn scalar() -> String {
    "scalar".into()
}

#[derive(Clone, Debug)]
pub struct Dialect {
    pub name: String,
    types: BTreeMap<String, String>,
    pub functions: Vec<FunctionDecl>,
    /// Where the dialect computes differently from DataFusion.
    pub semantics: Semantics,
}

impl Dialect {
    /// The built-in dialect called `name`; `datafusion` (the local engine) declares nothing.
    pub fn builtin(name: &str) -> Result<Dialect, String> {
        if name == "datafusion" {
            return Ok(Dialect {
                name: name.into(),
                types: BTreeMap::new(),
                functions: Vec::new(),
                semantics: Semantics::default(),
            });
        }
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            format!(
                "unknown dialect `{name}` (known: {})",
                known_dialects().join(", ")
            )
        })?;
        Self::parse(text)
    }

    pub fn parse(text: &str) -> Result<Dialect, String> {
        let file: DialectFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let dialect = Dialect {
            name: file.name,
            types: file.types,
            functions: file.functions,
            semantics: file.semantics,
        };
        dialect
            .semantics
            .validate()
            .map_err(|e| format!("[semantics]: {e}"))?;
        for f in &dialect.functions {
            for a in &f.args {
                dialect
                    .arg_type(a)
                    .map_err(|e| format!("function `{}`: {e}", f.name))?;
            }
            if !f.returns.starts_with("arg") {
                dialect.data_type(&f.returns).ok_or_else(|| {
                    format!("function `{}`: unknown return type `{}`", f.name, f.returns)
                })?;
            }
        }
        Ok(dialect)
    }

    /// The Arrow type of one of this dialect's type names (or a common one).
    pub fn data_type(&self, name: &str) -> Option<DataType> {
        let n = name.trim().to_lowercase();
        if let Some(inner) = n.strip_prefix("array(").and_then(|r| r.strip_suffix(')')) {
            return Some(DataType::List(Arc::new(Field::new(
                "item",
                self.data_type(inner)?,
                true,
            ))));
        }
        let base = n.split('(').next().unwrap_or(&n).trim();
        match self.types.get(base) {
            Some(common) => crate::types::sql_type(common),
            None => crate::types::sql_type(&n),
        }
    }

    fn arg_type(&self, name: &str) -> Result<ArgType, String> {
        Ok(match name {
            "any" => ArgType::Any,
            "numeric" => ArgType::Numeric,
            "decimal" => ArgType::Decimal,
            "string" => ArgType::String,
            "array" => ArgType::Array,
            other => ArgType::Exact(
                self.data_type(other)
                    .ok_or_else(|| format!("unknown argument type `{other}`"))?,
            ),
        })
    }

    /// Registers every declared function in `ctx`, replacing built-ins of the same name; the
    /// declarations of one name are its overloads.
    pub fn register(&self, ctx: &SessionContext) {
        let mut stubs: Vec<(Stub, bool)> = Vec::new();
        for f in &self.functions {
            let overload = Overload {
                args: f
                    .args
                    .iter()
                    .map(|a| self.arg_type(a).expect("validated at parse"))
                    .collect(),
                optional: f.optional,
                variadic: f.variadic,
                returns: if let Some(n) = f.returns.strip_prefix("arg") {
                    Returns::Arg(n.parse::<usize>().unwrap_or(1).saturating_sub(1))
                } else {
                    Returns::Type(self.data_type(&f.returns).expect("validated at parse"))
                },
            };
            let aggregate = f.kind == "aggregate";
            match stubs
                .iter_mut()
                .find(|(s, a)| s.name == f.name && *a == aggregate)
            {
                Some((stub, _)) => stub.overloads.push(overload),
                None => stubs.push((
                    Stub {
                        name: f.name.clone(),
                        overloads: vec![overload],
                        signature: Signature::user_defined(Volatility::Immutable),
                    },
                    aggregate,
                )),
            }
        }
        for (stub, aggregate) in stubs {
            if aggregate {
                ctx.register_udaf(AggregateUDF::new_from_impl(stub));
            } else {
                ctx.register_udf(ScalarUDF::new_from_impl(stub));
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ArgType {
    Any,
    Numeric,
    Decimal,
    String,
    Array,
    Exact(DataType),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Returns {
    Type(DataType),
    Arg(usize),
}

/// A function that has signatures and return types, and nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Stub {
    name: String,
    overloads: Vec<Overload>,
    signature: Signature,
}

/// One declared signature of a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Overload {
    args: Vec<ArgType>,
    optional: usize,
    variadic: bool,
    returns: Returns,
}

impl Stub {
    /// The argument types of the first overload that accepts `given`; with several
    /// overloads and none accepting, one error naming the call's types.
    fn coerce(&self, given: &[DataType]) -> Result<Vec<DataType>> {
        let mut first_error = None;
        for o in &self.overloads {
            match o.coerce(&self.name, given) {
                Ok(types) => return Ok(types),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if self.overloads.len() == 1 {
            return Err(first_error.expect("one overload"));
        }
        let types: Vec<String> = given.iter().map(ToString::to_string).collect();
        plan_err!(
            "function `{}` has no overload for ({})",
            self.name,
            types.join(", ")
        )
    }

    fn result(&self, given: &[DataType]) -> Result<DataType> {
        let o = self
            .overloads
            .iter()
            .find(|o| o.coerce(&self.name, given).is_ok())
            .unwrap_or(&self.overloads[0]);
        o.result(&self.name, given)
    }
}

impl Overload {
    fn coerce(&self, name: &str, given: &[DataType]) -> Result<Vec<DataType>> {
        let min = self.args.len() - self.optional.min(self.args.len());
        let max = if self.variadic {
            usize::MAX
        } else {
            self.args.len()
        };
        if given.len() < min || given.len() > max {
            let expected = if self.variadic {
                format!("at least {min}")
            } else if min == max {
                min.to_string()
            } else {
                format!("{min} to {max}")
            };
            return plan_err!(
                "function `{name}` takes {expected} argument(s), got {}",
                given.len()
            );
        }
        given
            .iter()
            .enumerate()
            .map(|(i, actual)| {
                let declared = self
                    .args
                    .get(i)
                    .or(self.args.last())
                    .expect("arity checked");
                match declared {
                    ArgType::Any => Ok(actual.clone()),
                    ArgType::Numeric if actual.is_numeric() || actual.is_null() => {
                        Ok(actual.clone())
                    }
                    ArgType::Decimal
                        if matches!(
                            actual,
                            DataType::Decimal128(..) | DataType::Decimal256(..)
                        ) || actual.is_integer()
                            || actual.is_null() =>
                    {
                        Ok(actual.clone())
                    }
                    ArgType::String
                        if matches!(
                            actual,
                            DataType::Utf8
                                | DataType::LargeUtf8
                                | DataType::Utf8View
                                | DataType::Null
                        ) =>
                    {
                        Ok(actual.clone())
                    }
                    ArgType::Array
                        if matches!(
                            actual,
                            DataType::List(_)
                                | DataType::LargeList(_)
                                | DataType::FixedSizeList(..)
                                | DataType::Null
                        ) =>
                    {
                        Ok(actual.clone())
                    }
                    ArgType::Exact(t) => Ok(t.clone()),
                    other => plan_err!(
                        "function `{name}`: argument {} must be {other:?}, got {actual}",
                        i + 1
                    ),
                }
            })
            .collect()
    }

    fn result(&self, name: &str, given: &[DataType]) -> Result<DataType> {
        match &self.returns {
            Returns::Type(t) => Ok(t.clone()),
            Returns::Arg(i) => given.get(*i).cloned().map_or_else(
                || plan_err!("function `{name}`: missing argument {}", i + 1),
                Ok,
            ),
        }
    }
}

impl ScalarUDFImpl for Stub {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.coerce(arg_types)
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.result(arg_types)
    }
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        not_impl_err!(
            "`{}` is a warehouse function: it is type-checked here, never executed",
            self.name
        )
    }
}

impl AggregateUDFImpl for Stub {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.coerce(arg_types)
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.result(arg_types)
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        not_impl_err!(
            "`{}` is a warehouse aggregate: it is type-checked here, never executed",
            self.name
        )
    }
}

#[cfg(test)]
mod dialect_tests {
    //! Every declared function of every dialect type-checks in a model over the test table,
    //! and returns the type it declares.

    use super::*;
    use datafusion::arrow::datatypes::{Schema, TimeUnit};
    use datafusion::datasource::empty::EmptyTable;

    fn test_table() -> Arc<Schema> {
        let utf8 = || DataType::Utf8;
        Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("n", DataType::Int64, true),
            Field::new("x", DataType::Float64, true),
            Field::new("dec", DataType::Decimal128(10, 2), true),
            Field::new("s", utf8(), true),
            Field::new("d", DataType::Date32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new(
                "tz",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("b", DataType::Boolean, true),
            Field::new(
                "arr",
                DataType::List(Arc::new(Field::new("item", utf8(), true))),
                true,
            ),
            Field::new("j", utf8(), true),
        ]))
    }

    fn check_dialect(name: &str) -> usize {
        let dialect = Dialect::builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(EmptyTable::new(test_table())))
            .unwrap();
        dialect.register(&ctx);
        let mut failures = Vec::new();
        for f in &dialect.functions {
            let sql = format!("select {} as v from t", f.example);
            match futures::executor::block_on(async { ctx.sql(&sql).await }) {
                Ok(df) => {
                    let got = df.schema().field(0).data_type().clone();
                    if !f.returns.starts_with("arg") {
                        let want = dialect.data_type(&f.returns).unwrap();
                        if !crate::types::same_family(&got, &want) {
                            failures.push(format!(
                                "{}: `{}` returns {got}, declared {want}",
                                f.name, f.example
                            ));
                        }
                    }
                }
                Err(e) => failures.push(format!(
                    "{}: `{}` does not type-check: {}",
                    f.name,
                    f.example,
                    e.strip_backtrace()
                )),
            }
        }
        assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
        dialect.functions.len()
    }

    #[test]
    fn trino_functions_type_check() {
        check_dialect("trino");
    }

    #[test]
    fn duckdb_functions_type_check() {
        check_dialect("duckdb");
    }

    #[test]
    fn postgres_functions_type_check() {
        check_dialect("postgres");
    }

    #[test]
    fn wrong_arity_is_a_planning_error() {
        let dialect = Dialect::builtin("trino").unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(EmptyTable::new(test_table())))
            .unwrap();
        dialect.register(&ctx);
        let err = futures::executor::block_on(async {
            ctx.sql("select date_diff('day', ts) from t").await
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("takes 3 argument(s), got 2"),
            "{err}"
        );
    }

    #[test]
    fn unknown_dialects_are_named() {
        let err = Dialect::builtin("oracle").unwrap_err();
        assert!(err.contains("trino"), "{err}");
    }
}
