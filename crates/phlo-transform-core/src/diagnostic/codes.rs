//! Every code the tool emits, as data (decision 9). Each entry is a constant the code base
//! builds diagnostics with and a row of [`ALL`]: its name, a one-line summary, a general help
//! line and an explanation. `docs/codes.md` is generated from this table ([`markdown`]; a test
//! fails when the page is stale) and `phlo-transform explain-code <CODE>` prints one entry.
//!
//! A diagnostic's own help line is specific to the case (the model, the column, the file); the
//! table's help is what to do about the code in general. Codes are never reused for another
//! meaning: a retired code keeps its row in [`RETIRED`].

use super::{Code, Diagnostic};
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// One code's entry in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    pub code: Code,
    /// The constant's name (`UNRESOLVED_RELATION`).
    pub name: &'static str,
    /// What the code means, in one line.
    pub summary: &'static str,
    /// What to do about it, in general.
    pub help: &'static str,
    /// When it is reported and why, for `explain-code` and docs/codes.md.
    pub explanation: &'static str,
}

impl CodeInfo {
    /// The category the code's letter stands for.
    pub fn category(&self) -> &'static str {
        category(self.code)
    }
}

/// The `explain-code --json` document: the entry and its category.
impl Serialize for CodeInfo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("CodeInfo", 6)?;
        out.serialize_field("code", &self.code)?;
        out.serialize_field("name", self.name)?;
        out.serialize_field("category", self.category())?;
        out.serialize_field("summary", self.summary)?;
        out.serialize_field("help", self.help)?;
        out.serialize_field("explanation", self.explanation)?;
        out.end()
    }
}

/// The category of a code's first letter.
pub fn category(code: Code) -> &'static str {
    if code.0.starts_with("API") {
        return "daemon API";
    }
    match code.0.as_bytes().first() {
        Some(b'P') => "project",
        Some(b'C') => "configuration",
        Some(b'S') => "parse",
        Some(b'R') => "resolution",
        Some(b'T') => "type",
        Some(b'G') => "graph",
        Some(b'K') => "contract",
        Some(b'L') => "plan and selection",
        Some(b'A') => "adapter",
        Some(b'E') => "execution",
        Some(b'X') => "test",
        Some(b'D') => "diff",
        Some(b'Y') => "state",
        Some(b'W') => "docs site",
        _ => "other",
    }
}

/// The entry of a code, matched case-insensitively (`t003` finds T003).
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    ALL.iter()
        .find(|c| c.code.0.eq_ignore_ascii_case(code.trim()))
}

/// `explain-code <code>`: the code's entry, or a P011 diagnostic suggesting codes one
/// character away.
pub fn explain(code: &str) -> Result<&'static CodeInfo, Diagnostic> {
    lookup(code).ok_or_else(|| {
        let wanted = code.trim().to_ascii_uppercase();
        let close = ALL
            .iter()
            .map(|info| info.code.0)
            .filter(|c| strsim::hamming(c, &wanted).is_ok_and(|d| d <= 1))
            .map(str::to_owned)
            .collect();
        Diagnostic::error(
            UNKNOWN_CODE,
            format!("no diagnostic code `{}`", code.trim()),
        )
        .with_suggestions(close)
        .with_help("`phlo-transform explain-code` without an argument lists every code")
    })
}

/// Codes no longer emitted, with what they meant; never given a new meaning.
pub const RETIRED: &[(&str, &str)] = &[(
    "L001",
    "an incremental model built as a full table (incremental models now run incrementally)",
)];

macro_rules! codes {
    ($(
        $name:ident = $code:literal {
            summary: $summary:literal,
            help: $help:literal,
            explanation: $explanation:literal $(,)?
        }
    )*) => {
        $(
            #[doc = $summary]
            pub const $name: Code = Code($code);
        )*

        /// Every code, in the order of the table (by category, then number).
        pub const ALL: &[CodeInfo] = &[$(
            CodeInfo {
                code: $name,
                name: stringify!($name),
                summary: $summary,
                help: $help,
                explanation: $explanation,
            },
        )*];
    };
}

codes! {
    // PROJECT
    WORKSPACE_NOT_FOUND = "P001" {
        summary: "The workspace directory does not exist.",
        help: "Pass an existing directory with --project-dir, or run from inside one.",
        explanation: "Every command starts by loading the workspace: the directory holding phlo.toml (or the current directory). A missing directory ends the command before anything is read.",
    }
    MODEL_OUTSIDE_NAMESPACE = "P002" {
        summary: "A model file is not inside a namespace folder.",
        help: "Move it into transforms/<namespace>/, or set `namespace` in the transform root's transform.toml.",
        explanation: "A model's name is its namespace, its folders and its file name. A .sql file directly in a transform root without a configured namespace has no namespace, so it cannot be named and is not loaded.",
    }
    DUPLICATE_MODEL = "P003" {
        summary: "Several model files resolve to the same model name or `@id`.",
        help: "Rename one of the files, or give one of them a different `@id`.",
        explanation: "Names and ids identify a model in state, lineage and selectors, so each must be unique in the workspace. Every file involved is listed.",
    }
    UNKNOWN_DIRECTIVE = "P004" {
        summary: "A header comment uses a directive that does not exist.",
        help: "Use one of the documented directives (`-- @table`, `-- @view`, `-- @key id`, …); see docs/workspace.md.",
        explanation: "Directives are the `-- @word` comment lines before a model's SQL. An unknown one is an error rather than ignored, so a misspelling never silently changes how a model is built.",
    }
    INVALID_DIRECTIVE_ARGUMENT = "P005" {
        summary: "A directive's argument is missing, extra or malformed.",
        help: "Write the directive as documented: `-- @table` alone, `-- @key col[, col]`, `-- @incremental window=ts`.",
        explanation: "Reported at the directive's line with what was expected, for example an argument given to a directive that takes none or a column list that does not parse.",
    }
    CONFLICTING_DIRECTIVES = "P006" {
        summary: "Two directives of a model contradict each other or one is repeated.",
        help: "Keep one materialisation (`@table`, `@view`, `@incremental`, `@ephemeral`) and each directive once.",
        explanation: "A model has exactly one materialisation and each setting once; both places are named in the message.",
    }
    UNREADABLE_MODEL = "P007" {
        summary: "A model file cannot be read, or is not UTF-8 text.",
        help: "Check the file's permissions and save it as UTF-8.",
        explanation: "The file is listed by discovery but its contents could not be loaded, so the model is missing from the workspace for this command.",
    }
    UNKNOWN_MODEL = "P008" {
        summary: "A command names a model that does not exist.",
        help: "Check the spelling; `phlo-transform list` shows every model, and close names are suggested.",
        explanation: "Reported by commands that take a model name or URI (`inspect`, `explain`, `diff`, `state model`).",
    }
    INVALID_NAME = "P009" {
        summary: "A namespace, schema, model, source or `@id` name breaks the identifier rule.",
        help: "Use 1–128 ASCII letters, digits and `_`, not starting with a digit.",
        explanation: "Names are never paths: a name becomes a folder of the local warehouse and an identifier in SQL, so one rule applies wherever a name enters (configuration, directives, file names, the command line). A root with an invalid namespace is not loaded.",
    }
    UNREADABLE_FOLDER = "P010" {
        summary: "A folder in the workspace could not be listed.",
        help: "Check the folder's permissions; models in it would otherwise be missed.",
        explanation: "Discovery walks every transform root; a folder it cannot list is reported instead of silently skipped.",
    }
    UNKNOWN_CODE = "P011" {
        summary: "`explain-code` was given a code that does not exist.",
        help: "`phlo-transform explain-code` without an argument lists every code.",
        explanation: "Codes are one letter for the category and three digits (T003); close codes are suggested.",
    }
    INIT_TARGET_NOT_EMPTY = "P012" {
        summary: "`init` was given a directory that is not empty, or a path that is not a directory.",
        help: "Give `phlo-transform init` a new or empty directory; it never overwrites a file.",
        explanation: "`init` writes a whole new workspace (phlo.toml, a source, two models, a test, a README). Mixing it into existing files could replace or shadow them, so it refuses before writing anything.",
    }
    INIT_WRITE_FAILED = "P013" {
        summary: "`init` could not read its directory or write one of the workspace's files.",
        help: "Check the directory's permissions and free space, then run `init` again in an empty directory.",
        explanation: "The message names the file and the operating system's error; the files written before it are listed as notes. Each file is created new, so nothing existing is replaced.",
    }
    FORMAT_LEFT_ALONE = "P014" {
        summary: "`fmt` left a file as it is: formatting it could not be proven to keep the same query, directives and comments.",
        help: "Format the file by hand, or put `-- fmt: off` and `-- fmt: on` around the part the formatter mishandles.",
        explanation: "`fmt` rewrites a file only when the result parses to the same canonical SQL (so the model's version cannot change), declares the same directives, keeps every comment in order, and is stable (formatting it again changes nothing). A templated file (`{{ … }}`, `{% … %}`) is left alone too: its SQL is only known once rendered. The warning says which check failed; the file is untouched.",
    }
    FORMAT_WRITE_FAILED = "P015" {
        summary: "`fmt` could not write a formatted file.",
        help: "Check the file's permissions; it was left as it was.",
        explanation: "The message carries the operating system's error. The other files are still formatted, and the command exits 2.",
    }
    DBT_PROJECT_UNREADABLE = "P016" {
        summary: "`import dbt` cannot read the dbt project: no dbt_project.yml, or a YAML file that does not parse.",
        help: "Point `phlo-transform import dbt` at the folder holding dbt_project.yml, and fix the YAML at the reported line.",
        explanation: "The import reads dbt_project.yml (the project's name, model and seed paths, folder configuration) and every .yml under the model paths (models' descriptions, columns and tests; sources). A file it cannot read or parse stops the import before anything is written, since what it would leave out could not be listed.",
    }
    DBT_NOT_CONVERTED = "P017" {
        summary: "A dbt model, test or macro uses what `import dbt` cannot convert into plain SQL; it is left out of the imported workspace.",
        help: "Rewrite the construct as plain SQL in the imported workspace (a model per Jinja branch, a data test under tests/), or leave the model in dbt.",
        explanation: "`{{ ref(...) }}`, `{{ source(...) }}`, `{{ config(...) }}` with literal settings, `{# comments #}` and the tests `not_null`, `unique`, `accepted_values` and `relationships` are converted. Anything else — other Jinja (`{% if %}`, `{% for %}`, `{% set %}`, `is_incremental()`, `var()`), macros, Python models, other tests, hooks — is listed with its file and line, and the model (or test) is left out rather than silently changed. A model that reads one left out is left out too.",
    }
    IMPORT_TARGET_NOT_EMPTY = "P018" {
        summary: "`import dbt` was given an output directory that is not empty, or a path that is not a directory.",
        help: "Give `--out` a new or empty directory; the import never overwrites a file.",
        explanation: "The import writes a whole new workspace. Mixing it into existing files could replace or shadow them, so it refuses before writing anything.",
    }
    IMPORT_WRITE_FAILED = "P019" {
        summary: "`import dbt` could not write one of the new workspace's files.",
        help: "Check the directory's permissions and free space, then import again into an empty directory.",
        explanation: "The message names the file and the operating system's error. Each file is created new, so nothing existing is replaced.",
    }
    // CONFIGURATION
    MALFORMED_TOML = "C001" {
        summary: "phlo.toml or a transform.toml cannot be read or is not valid TOML.",
        help: "Fix the TOML syntax at the reported line.",
        explanation: "The message carries the TOML parser's explanation and the location of the error.",
    }
    INVALID_CONFIG = "C002" {
        summary: "A configuration value is of the wrong type, unknown, or not allowed where it is set.",
        help: "See docs/workspace.md for the keys each file accepts and where.",
        explanation: "Reported at the key's line. Unknown keys are errors so that a misspelt setting is never silently ignored.",
    }
    INVALID_GLOB = "C003" {
        summary: "A glob pattern in the configuration does not parse or has the wrong shape.",
        help: "Fix the pattern; transform roots end in `/**`.",
        explanation: "Covers `[transforms] include`/`exclude` patterns and other globs in phlo.toml.",
    }
    INVALID_SOURCE = "C004" {
        summary: "A source declaration is incomplete or contradictory.",
        help: "Declare it as [source.\"ns.name\"] with a `location` (a file, a folder or a catalog table).",
        explanation: "Sources are the external tables models read. Their declaration must say where the data is and, for typed formats, how to read it.",
    }
    UNKNOWN_CONTRACT_MODEL = "C005" {
        summary: "A [model.\"x\"] section names no model, or several.",
        help: "Use the model's full name or an unambiguous suffix.",
        explanation: "Contracts and per-model settings in phlo.toml are keyed by model name; a key that matches nothing would silently not apply.",
    }
    SPELLING_ALIAS = "C006" {
        summary: "(warning) A key or directive spelled the other way (`materialised`) was accepted.",
        help: "Spell it as the documentation does to silence the warning.",
        explanation: "British and American spellings are both read, with a warning naming the documented one.",
    }
    INVALID_OPTION = "C007" {
        summary: "A command-line option's value is outside what the command accepts.",
        help: "Pass a value the message names (`phlo-transform <command> --help`).",
        explanation: "Reported before the command does anything, for values that parse but cannot be honoured: `watch --poll-ms` and `--source-poll-ms` are bounded so a watch neither spins on the disk nor goes deaf for hours; `state evidence --kind` is one of the kinds the state records.",
    }
    SHARED_CACHE_UNAVAILABLE = "C008" {
        summary: "(warning) The shared compile cache (`[cache] url`, or a PostgreSQL state store) could not be read or written.",
        help: "Check that the directory exists and is writable or that PostgreSQL is reachable; `[cache] url = \"none\"` turns the shared cache off.",
        explanation: "The compile goes on without it, on the workspace's own cache (`.phlo/cache/compile`): the types are the same, only a fresh clone is slower. The message names the store (a URL without its password) and the error.",
    }
    // PARSE
    SYNTAX_ERROR = "S001" {
        summary: "The model's SQL does not parse.",
        help: "Fix the SQL at the reported line and column.",
        explanation: "Models are parsed with the sqlparser DataFusion uses, in the workspace's dialect; the parser's message and position are kept.",
    }
    NOT_A_QUERY = "S002" {
        summary: "A model file holds no statement, several, or a statement that is not a query.",
        help: "A model is exactly one SELECT (or WITH … SELECT, VALUES, set operation).",
        explanation: "phlo-transform writes the table or view itself; a model only says what rows it has.",
    }
    TEMPLATE_ERROR = "S003" {
        summary: "A `{{ … }}` template in a model is not one of the supported forms.",
        help: "Only {{ ref(\"ns.model\") }}, {{ source(\"ns\", \"t\") }} and {{ var(\"name\") }} are supported.",
        explanation: "Templating is restricted on purpose: the SQL must stay analysable, so there are no loops, conditions or macros.",
    }
    QUERY_TOO_DEEP = "S004" {
        summary: "The query nests deeper than the compiler walks.",
        help: "Split the query into CTEs or several models.",
        explanation: "Operators in one chain, set operations and parentheses are counted on the tokens before parsing, so no input can exhaust the stack.",
    }
    // RESOLUTION
    UNRESOLVED_RELATION = "R001" {
        summary: "A relation a model reads is neither a model nor a source.",
        help: "Check the spelling (close names are suggested), or declare the source in phlo.toml.",
        explanation: "Relations are resolved in the order of SPEC §12: exact workspace names, then names relative to the model's namespace, then sources. Nothing matched.",
    }
    AMBIGUOUS_RELATION = "R002" {
        summary: "A relation name matches several models or sources.",
        help: "Qualify the name (`namespace.model`) so it matches one.",
        explanation: "A short name is accepted only when exactly one candidate ends with it.",
    }
    UNREADABLE_SOURCE = "R003" {
        summary: "A source's data cannot be read by the local engine.",
        help: "Fix or replace the file (the row, file or log entry is named), or point the source elsewhere.",
        explanation: "Sources are read through before compiling, so a malformed CSV row, a truncated Parquet file or a corrupt Delta log is found at check time instead of in the middle of a run.",
    }
    // TYPE
    UNKNOWN_COLUMN = "T001" {
        summary: "A column the query names does not exist in its input.",
        help: "Check the spelling (close names are suggested) or the upstream model's columns.",
        explanation: "Every model is typed against its inputs' inferred schemas; the column is located in the model's SQL.",
    }
    AMBIGUOUS_COLUMN = "T002" {
        summary: "An unqualified column exists in several inputs of the query.",
        help: "Qualify it with its table or alias.",
        explanation: "Reported where the column is written, with the inputs that have it.",
    }
    INCOMPATIBLE_TYPES = "T003" {
        summary: "Two operands (a comparison, a join key, an arithmetic operation) have types with no common type.",
        help: "Cast one side so both operands have compatible types.",
        explanation: "Found by DataFusion's type coercion at check time, the same rules the local engine runs with; located at the rejected expression.",
    }
    INVALID_CAST = "T004" {
        summary: "A CAST between types that cannot be converted.",
        help: "Cast through a type both sides convert to, or fix the target type.",
        explanation: "Reported when the analyzer rejects a cast for its types; a cast that fails only on some values fails at run time (E006).",
    }
    UNKNOWN_FUNCTION = "T005" {
        summary: "The query calls a function that the dialect does not define.",
        help: "Check the name (close names are suggested) or the dialect's function list (docs/dialects.md).",
        explanation: "Functions are those of the workspace's dialect (dialects/<name>.toml) on top of DataFusion's.",
    }
    NOT_GROUPED = "T006" {
        summary: "A selected column is neither grouped nor aggregated.",
        help: "Add the column to GROUP BY or wrap it in an aggregate.",
        explanation: "In a query with GROUP BY or aggregates, every selected expression must be determined by the groups.",
    }
    SET_OPERATION_MISMATCH = "T007" {
        summary: "The branches of a UNION, INTERSECT or EXCEPT differ in column count or types.",
        help: "Make every branch return the same number of columns with compatible types.",
        explanation: "Columns are matched by position; the message names the first branch that differs.",
    }
    SUBQUERY_COLUMNS = "T008" {
        summary: "A subquery returns the wrong number of columns for where it is used.",
        help: "A scalar or IN subquery returns exactly one column.",
        explanation: "Found while typing the subquery's context.",
    }
    UNTYPEABLE = "T009" {
        summary: "The model could not be typed (a construct the type checker does not model).",
        help: "Rewrite the construct, or set `analysis = \"baseline\"` for this model to skip strict typing.",
        explanation: "Under strict analysis every model must be typed; under baseline a model whose schema is unknown is allowed, with this code as a warning, and its dependents lose typing too.",
    }
    ARGUMENT_TYPES = "T010" {
        summary: "A function is called with argument types it does not accept (`sum(a_date)`).",
        help: "Cast the arguments to types the function accepts; the accepted signatures are listed.",
        explanation: "Found by DataFusion's signature checks at check time; located at the call.",
    }
    NOT_BOOLEAN = "T011" {
        summary: "A condition (WHERE, HAVING, JOIN … ON, CASE WHEN, NOT) is not boolean.",
        help: "Compare the value (`col <> 0`, `col is not null`) to make it a condition.",
        explanation: "DataFusion would accept some non-boolean conditions that warehouses reject, so check rejects them for every dialect.",
    }
    DIALECT_DIFFERENCE = "T012" {
        summary: "(warning) The local engine may compute a construct differently from the target dialect.",
        help: "Cast explicitly so both engines compute the same type, or accept the difference.",
        explanation: "Declared per dialect in dialects/<name>.toml [semantics]: for example integer division, decimal aggregate precision, or DuckDB's HUGEINT sum over integers.",
    }
    // GRAPH
    CYCLE = "G001" {
        summary: "Models depend on each other in a cycle.",
        help: "Break the cycle: one of the listed models must not read the next.",
        explanation: "The workspace DAG must be acyclic; every model on the cycle is named in order.",
    }
    // CONTRACT
    CONTRACT_MISSING_COLUMN = "K001" {
        summary: "A contract declares a column the model does not produce.",
        help: "Produce the column, or remove it from the contract.",
        explanation: "Contracts ([model.\"x\".columns] or directives) are checked at compile time against the inferred schema.",
    }
    CONTRACT_TYPE_MISMATCH = "K002" {
        summary: "A column's inferred type differs from its contract's declared type.",
        help: "Cast the column in the model, or change the declared type.",
        explanation: "Types are compared after mapping the declared type name through the dialect.",
    }
    CONTRACT_EXTRA_COLUMN = "K003" {
        summary: "A model with an enforced contract produces a column the contract does not declare.",
        help: "Declare the column, or stop producing it.",
        explanation: "Only enforced contracts are closed; others allow extra columns.",
    }
    CONTRACT_UNKNOWN_COLUMN = "K004" {
        summary: "A directive (`@key`, `@not-null`, an incremental strategy) names a column the model does not produce.",
        help: "Name an output column of the model.",
        explanation: "Directive columns refer to the model's output, checked against its inferred schema.",
    }
    CONTRACT_UNCHECKED = "K005" {
        summary: "A contract cannot be checked because the model's schema is unknown.",
        help: "Type the model (strict analysis, or baseline without unknown constructs) so its contract can be verified.",
        explanation: "Reported instead of silently passing a contract nobody checked.",
    }
    // PLAN AND SELECTION
    STALE_PLAN = "L002" {
        summary: "A stored plan no longer matches the workspace or its state.",
        help: "Run `phlo-transform plan` again and apply the new plan.",
        explanation: "`apply` executes exactly a stored plan; it first plans again and refuses when the result differs.",
    }
    UNKNOWN_PLAN = "L003" {
        summary: "No stored plan has the given id.",
        help: "`phlo-transform plan` prints the id of the plan it stores.",
        explanation: "Plans are stored in the state database under their id. A stored plan that cannot be read is L012 or L013, never \"no stored plan\".",
    }
    EMPTY_SELECTION = "L004" {
        summary: "The selection matches no model.",
        help: "Loosen --tag/--workflow/--exclude, or check the selectors.",
        explanation: "Reported when every matched model was filtered out or excluded.",
    }
    UNMATCHED_SELECTOR = "L005" {
        summary: "A selector term matches nothing.",
        help: "Check the term's spelling; close names are suggested.",
        explanation: "Each term of a selection must match at least one model, tag or workflow, so a typo is never an empty run.",
    }
    AMBIGUOUS_SELECTOR = "L006" {
        summary: "A short selector matches several models.",
        help: "Qualify the name so it matches one model, or use a glob.",
        explanation: "A suffix selects one model only when exactly one model ends with it.",
    }
    INVALID_SELECTOR = "L007" {
        summary: "A selector or --since ref does not parse or name anything valid.",
        help: "See docs/cli.md for the selector syntax; --since takes a branch, tag or commit.",
        explanation: "The selector language (SPEC §82) is shared by plan, apply, run, test, list, lineage and impact.",
    }
    EXCLUDED_DEPENDENCY_MISSING = "L008" {
        summary: "The selection reads excluded models that were never materialised.",
        help: "Include those models in the selection, or build them first.",
        explanation: "An excluded dependency is read from its existing materialisation; when there is none, the selected models cannot run.",
    }
    EXCLUDED_DEPENDENCY = "L009" {
        summary: "(warning) An excluded model is read by the selection; its existing materialisation is used.",
        help: "Include it to rebuild it too.",
        explanation: "Said so the run's inputs are never a surprise.",
    }
    GIT_UNAVAILABLE = "L010" {
        summary: "--since needs Git, and the workspace is not in a repository or the ref is missing.",
        help: "Run inside a Git repository with the ref fetched (`git fetch origin main`).",
        explanation: "The `changed` selector compares models' semantic versions with those at the ref.",
    }
    BREAKING_SCHEMA_CHANGE = "L011" {
        summary: "A plan has a breaking schema change and `[schema] breaking_changes = \"error\"`.",
        help: "Make the change additive, or allow breaking changes for this run.",
        explanation: "Schema changes are classified against the recorded columns (SPEC §49–51); the breaking ones are listed.",
    }
    PLAN_FORMAT_MISMATCH = "L012" {
        summary: "A stored plan was written in a format this phlo-transform does not read.",
        help: "Make the plan again with `phlo-transform plan` and apply its id.",
        explanation: "Stored plans carry their format's version; a plan stored by an older or newer phlo-transform is refused with both versions named instead of being misread.",
    }
    UNREADABLE_PLAN = "L013" {
        summary: "A stored plan is in the current format but its body cannot be read.",
        help: "Make the plan again with `phlo-transform plan` and apply its id.",
        explanation: "The stored body does not parse as a plan (the state database was edited or damaged); the parser's message is shown.",
    }
    NOT_A_GIT_REPOSITORY = "L014" {
        summary: "lineage --diff needs the workspace inside a Git repository, and it is not (or git cannot run).",
        help: "Run it on a workspace inside a Git repository with at least one commit.",
        explanation: "`lineage --diff <ref>` compiles the workspace as it was at a commit, read from Git's objects; without a repository there is no history to read.",
    }
    UNKNOWN_GIT_REF = "L015" {
        summary: "A Git ref given to lineage --diff names no commit, or has no common ancestor with HEAD.",
        help: "Name a branch, tag or commit the repository has (`git fetch origin main`, `git branch -a`).",
        explanation: "The base compared with is merge-base(ref, HEAD); a ref that does not resolve, a repository without commits or unrelated histories give no base.",
    }
    WORKSPACE_MISSING_AT_REF = "L016" {
        summary: "The workspace did not exist at the Git ref's merge-base (its directory or its phlo.toml).",
        help: "Compare with a ref whose history has the workspace.",
        explanation: "The workspace's subtree is read at merge-base(ref, HEAD); a workspace added after that commit has nothing to compare with.",
    }
    GIT_TREE_UNREADABLE = "L017" {
        summary: "The workspace at a Git ref could not be read from Git's objects or written to a temporary directory.",
        help: "Check the repository (`git fsck`) and the temporary directory's space and permissions (TMPDIR).",
        explanation: "`lineage --diff` writes the workspace's files at the base commit to a temporary directory (removed afterwards) and compiles them there.",
    }
    REVIEW_REFUSED = "L018" {
        summary: "review found what --fail-on refuses: a BREAKING schema change, a diff policy violation or a failed test.",
        help: "Read the review's sections for what met the condition; fix it, or drop that --fail-on to report it only.",
        explanation: "`review --fail-on breaking|diff-policy|tests` exits 1 when the report holds a BREAKING schema change, a data diff that violates its `[model.\"x\".diff]` policy, or a test that did not pass at its current version; the report is still printed, with one L018 per condition met. `[schema] breaking_changes = \"error\"` counts as `--fail-on breaking`.",
    }
    // ADAPTER
    QUERY_FAILED = "A001" {
        summary: "The warehouse rejected or failed a query.",
        help: "Read the engine's message; the model and statement are named.",
        explanation: "The engine's own error (with its SQLSTATE or error name where it has one), for failures not classified more precisely as E006, E007, A006 or A011.",
    }
    WRITE_FAILED = "A002" {
        summary: "Writing a table's data failed (disk full, permission denied, I/O).",
        help: "Free space or fix permissions under the warehouse, then run again; nothing half-written is published.",
        explanation: "Delta commits are atomic: a failed write leaves the previous version current.",
    }
    RELATION_UNAVAILABLE = "A003" {
        summary: "A source or model relation cannot be registered or read by the engine.",
        help: "Check the relation's location and format.",
        explanation: "Reported when the engine cannot open a relation the plan needs.",
    }
    CATALOG_UNAVAILABLE = "A004" {
        summary: "A source's catalog (an Iceberg REST catalog) could not be read.",
        help: "Check the catalog URL and credentials; secrets are never printed.",
        explanation: "Catalog sources are loaded before compiling to type them.",
    }
    CONSTRAINT_NOT_GUARANTEED = "A005" {
        summary: "The existing Delta table has CHECK constraints the model does not guarantee.",
        help: "Drop the constraint from the table, or make the model guarantee it.",
        explanation: "Writing rows that may break a table's constraint would fail half-way, so it is refused up front.",
    }
    ENGINE_FAILED = "A006" {
        summary: "The engine failed running a query for a reason that is not the SQL's fault.",
        help: "Resources exhausted, an internal error, or something the engine does not implement: see the message.",
        explanation: "Not retried, because the same query would fail the same way.",
    }
    PATH_OUTSIDE_WAREHOUSE = "A007" {
        summary: "A path the local engine would write or delete is not inside the warehouse root.",
        help: "Check the workspace's names and the warehouse folder for symlinks; nothing was touched.",
        explanation: "Every path the local engine writes or deletes is proven to be a direct, non-symlinked child of the warehouse root first.",
    }
    ADAPTER_UNAVAILABLE = "A008" {
        summary: "The warehouse cannot be reached or refuses the connection.",
        help: "Check that the server runs, the URL, the user and the password (never printed).",
        explanation: "Server down, wrong password, missing database. Connection failures during a run are retried as the retry policy allows.",
    }
    DIALECT_UNSUPPORTED = "A009" {
        summary: "A model uses a construct the adapter's dialect cannot express.",
        help: "Rewrite the construct for the target, or run the model on another adapter.",
        explanation: "Found at check time: translation fails loudly instead of sending SQL the warehouse would misread.",
    }
    UNKNOWN_ADAPTER = "A010" {
        summary: "The chosen adapter is not configured, or its configuration is incomplete.",
        help: "Configure [adapter] or [adapters.<name>] in phlo.toml (docs/adapters.md).",
        explanation: "Covers `--adapter <name>`/PHLO_ADAPTER naming no target and missing settings such as an unset password_env variable.",
    }
    QUERY_CANCELLED = "A011" {
        summary: "The warehouse cancelled a query.",
        help: "Raise --model-timeout if the model needs longer.",
        explanation: "By --model-timeout, --fail-fast, Ctrl-C or an operator; not retried.",
    }
    RESERVED_RELATION_NAME = "A012" {
        summary: "A model's table name ends in a suffix the warehouse adapters keep for their own temporary tables.",
        help: "Rename the model's file so that its table does not end in `__phlo_new` or `__phlo_batch`.",
        explanation: "Tables are built as `<table>__phlo_new` and renamed into place (PostgreSQL, DuckDB); Trino stages incremental batches in `<table>__phlo_batch`. A model with such a table would be dropped by another model's build, so it is refused at check, on warehouse targets.",
    }
    WAREHOUSE_SCHEMA_CACHE = "A013" {
        summary: "(warning) The warehouse's catalog could not be read; relations only the warehouse has are typed from the schema cache.",
        help: "Start the warehouse or fix the adapter's settings; `plan` and `run` refresh the cache.",
        explanation: "Relations that are neither models nor declared sources but exist in a PostgreSQL or DuckDB target are typed from its catalog, cached in .phlo/warehouse-schemas.json. The warning names how old the cached columns are, and the relations the cache does not have (they stay unresolved), or says that the cache could not be written.",
    }
    // EXECUTION
    UPSTREAM_FAILED = "E001" {
        summary: "A model was not built because a model it reads did not materialise.",
        help: "Fix the upstream failure; the model runs on the next run.",
        explanation: "Independent branches go on after a failure; only dependents are blocked.",
    }
    TASK_PANICKED = "E002" {
        summary: "An internal error while executing a model.",
        help: "Report it with the model and the message: this is a bug.",
        explanation: "The run goes on with the other models and records the failure.",
    }
    MODEL_TIMEOUT = "E003" {
        summary: "A model's attempt ran longer than --model-timeout.",
        help: "Raise --model-timeout, or make the model cheaper.",
        explanation: "The attempt's warehouse queries are cancelled.",
    }
    CANCELLED = "E004" {
        summary: "Work stopped by --fail-fast or an interrupt before it finished.",
        help: "`run --resume <run>` continues it.",
        explanation: "Cancelled models keep no partial results: their tables keep their previous version.",
    }
    RUN_NOT_CONTINUABLE = "E005" {
        summary: "`run --resume` of a finished run, or `run --retry-failed` of one still in progress.",
        help: "Resume interrupted runs; retry the failures of finished ones.",
        explanation: "A run is continued under its own id only while it is interrupted.",
    }
    SQL_RUNTIME_ERROR = "E006" {
        summary: "The model's SQL failed on its data while running.",
        help: "Division by zero, overflow, or a value a cast cannot convert: guard the expression (NULLIF, TRY_CAST).",
        explanation: "The SQL's fault on this data, so it is never retried.",
    }
    CONSTRAINT_VIOLATED = "E007" {
        summary: "The model's rows break a NOT NULL or CHECK constraint of its table.",
        help: "Filter or fix the offending rows, or relax the constraint.",
        explanation: "Nothing is written: the previous version stays current.",
    }
    BLOCKED_BY_PLAN = "E008" {
        summary: "The plan blocked a model before the run.",
        help: "The message says why: a compile error in it or upstream, an unreadable source, a stale source under `block`.",
        explanation: "Blocked models are recorded in the run so that `run --retry-failed` picks them up.",
    }
    // TEST
    TEST_FAILED = "X001" {
        summary: "A data test found violating rows.",
        help: "Inspect the rows the test query returns, then fix the data or the model.",
        explanation: "Tests (@key, @not-null, custom tests) run after the models; the count of violating rows is reported.",
    }
    TEST_ERROR = "X002" {
        summary: "A data test could not run.",
        help: "Fix the test's SQL or the model it tests.",
        explanation: "The test's query could not be built or failed in the engine: distinct from a test that ran and found rows.",
    }
    // DIFF
    DIFF_UNKNOWN_SIDE = "D001" {
        summary: "A diff side names no recorded version, Delta version, timestamp, reference or Iceberg snapshot that exists, or one the target cannot read.",
        help: "Write delta:3, delta:2026-11-30T20:00:00Z, a version `state model` lists, ref:<reference> or (Trino + Nessie) iceberg:<snapshot id>.",
        explanation: "Each side of `diff` is a model's current table, a recorded version, a time-travel point or an environment's dataset (`ref:<name>`); on Trino + Nessie only references and Iceberg snapshots (`iceberg:<id>`).",
    }
    DIFF_KEY_MISSING = "D002" {
        summary: "A key (or mapped) column is missing on one side.",
        help: "Pass --key with columns both sides have, or map renamed columns.",
        explanation: "The key comes from --key, the model's @key or the plan's inferred grain.",
    }
    DIFF_INCOMPATIBLE_TYPES = "D003" {
        summary: "A compared column's types on the two sides have no common type.",
        help: "Diff on key columns of a scalar type, or --exclude the column.",
        explanation: "Columns are compared after widening to a common type; some pairs have none.",
    }
    DIFF_UNREADABLE_SIDE = "D004" {
        summary: "A diff side could not be read.",
        help: "The table is missing, its files are unreadable, or its query failed: see the message.",
        explanation: "Nothing is compared when either side cannot be read.",
    }
    DIFF_DUPLICATE_KEYS = "D005" {
        summary: "Rows share a key on one side.",
        help: "Choose a key that is unique, or fix the duplicates; they are listed and not compared.",
        explanation: "Duplicates are reported with counts and samples, never collapsed.",
    }
    DIFF_INVALID_OPTION = "D006" {
        summary: "Invalid diff options or [model.\"x\".diff] settings.",
        help: "See docs/diff.md for the options and policy keys.",
        explanation: "Covers bad tolerances, strategies, sample sizes and --output paths.",
    }
    BRANCH_DIFF_SELF = "D007" {
        summary: "A branch diff compares a reference with itself.",
        help: "Compare a candidate with its base: `diff --from main --to <candidate>`.",
        explanation: "`diff --from <ref> --to <ref>` (no model) compares two environments dataset by dataset (SPEC §52); a reference against itself is never evidence, so it is refused.",
    }
    DIFF_TOO_MANY_REMOVED = "D010" {
        summary: "Policy: more removed rows than `max_removed_rows`.",
        help: "Check why rows disappeared, or raise the threshold.",
        explanation: "Diff policies (SPEC §54) gate promotion and CI on the diff's figures.",
    }
    DIFF_TOO_MANY_ADDED = "D011" {
        summary: "Policy: more added rows than `max_added_rows`.",
        help: "Check where the rows came from, or raise the threshold.",
        explanation: "Diff policies (SPEC §54) gate promotion and CI on the diff's figures.",
    }
    DIFF_TOO_MANY_CHANGED = "D012" {
        summary: "Policy: a larger fraction of changed rows than `max_changed_fraction`.",
        help: "Check the changed columns' samples, or raise the threshold.",
        explanation: "The fraction is changed rows over base rows.",
    }
    DIFF_UNMEASURED = "D013" {
        summary: "Policy: a row threshold could not be measured.",
        help: "Diff with a key (--key or @key) and --full so every row is measured.",
        explanation: "Keyless, sampled, duplicate-key and aggregate-only diffs cannot count rows exactly; the policy fails rather than passing on unmeasured zeros (SPEC §54).",
    }
    DIFF_COLUMN_CHANGED = "D014" {
        summary: "Policy: a column changed more values than its `max_changed_values`.",
        help: "Check the column's samples, or raise the threshold.",
        explanation: "Per-column thresholds live under [model.\"x\".diff.columns].",
    }
    // STATE
    STATE_UNAVAILABLE = "Y001" {
        summary: "The state database cannot be opened or read.",
        help: "Check --state / PHLO_STATE_URL; `phlo-transform clean --all` resets a damaged local state.",
        explanation: "State (runs, versions, plans) lives in SQLite at .phlo/transform/state.db or in PostgreSQL.",
    }
    STATE_WRITE_FAILED = "Y002" {
        summary: "Writing to the state database or an artifact failed.",
        help: "Check that the state database and .phlo/ are writable.",
        explanation: "A run whose state cannot be recorded stops with this error rather than running unrecorded.",
    }
    UNKNOWN_RUN = "Y003" {
        summary: "No recorded run has the given id or prefix.",
        help: "`phlo-transform state runs` lists the recorded runs.",
        explanation: "Run ids are accepted by unique prefix.",
    }
    AMBIGUOUS_RUN = "Y004" {
        summary: "A run id prefix matches several runs.",
        help: "Give more characters of the id.",
        explanation: "The matching runs are listed.",
    }
    NO_MODEL_STATE = "Y005" {
        summary: "The state has no record of the model.",
        help: "Build the model first (`phlo-transform run`).",
        explanation: "Commands that read a model's recorded history need at least one build.",
    }
    WRITER_BUSY = "Y006" {
        summary: "Another live process holds the environment's writer lease.",
        help: "Wait for the other run to finish; a killed process's lease expires on its own.",
        explanation: "One writer per workspace and environment: run, apply and promote take a lease with expiry in the state store.",
    }
    UNKNOWN_REF = "Y007" {
        summary: "No environment reference of that name.",
        help: "`phlo-transform ref list` shows the references; `ref create <name> --from main` makes one.",
        explanation: "Environments of the embedded engine are references recorded in the state store (SPEC §44-45): `--ref`, `ref show`, `ref delete` and `promote` name one that must exist. `main` always exists.",
    }
    REF_EXISTS = "Y008" {
        summary: "A reference of that name already exists.",
        help: "Pick another name, or delete the old reference first (`ref delete <name>`).",
        explanation: "`ref create` never redefines a reference: its recorded provenance (created_from) is what promotion audits.",
    }
    MAIN_REF_PROTECTED = "Y009" {
        summary: "`main` cannot be deleted.",
        help: "`main` is the default base, not a scratch branch; roll it back instead (`rollback --ref main --to <promotion>`).",
        explanation: "Deleting `main` would leave every reader of the published environment without tables (SPEC §45).",
    }
    INVALID_REF_NAME = "Y010" {
        summary: "The reference name is not valid.",
        help: "Use letters, digits, `-`, `_`, `.` and `/` (`feature/new-assay`), at most 100 characters, not `local`.",
        explanation: "A reference name becomes part of a folder name under .phlo/warehouse/.refs/ and of the state environment's name; names are never paths, so `..`, leading `/` or `.` and other characters are refused.",
    }
    PROMOTION_BLOCKED = "Y011" {
        summary: "A promotion gate failed: nothing was published.",
        help: "Read the failed gate's detail: run the candidate again (`run --ref <name>`), fix the failing tests, or recreate the candidate from the current target.",
        explanation: "`promote` publishes a candidate only when every gate passes (SPEC §47): run (its last run passed and is bound to its current hash), tests, blocked, schema (no breaking column change), data_diff (no diff policy violated by the branch diff recorded for both hashes; with --require-diff such a --full diff must exist), lineage_diff (no consumer orphaned by the lineage diff recorded for the candidate's hash), base (the target is still at the hash the candidate was created from) and conflicts.",
    }
    STALE_REF = "Y012" {
        summary: "A reference moved while it was being changed: nothing was written.",
        help: "Evaluate again: another promotion, rollback or run changed the reference first.",
        explanation: "Every change of references is one state transaction under compare-and-swap on the hashes its decision was made against: of two concurrent promotions one wins and the other is refused, and a candidate that advanced after its audit is never published unaudited.",
    }
    UNKNOWN_PROMOTION = "Y013" {
        summary: "No recorded promotion matches the rollback target.",
        help: "`phlo-transform ref show <ref>` lists the reference's promotions; pass one's id (or a unique prefix).",
        explanation: "`rollback --ref <ref> --to <promotion>` restores the pointers a recorded promotion replaced.",
    }
    ROLLBACK_VERSION_MISSING = "Y014" {
        summary: "The table has no such Delta version.",
        help: "Pick a version the table's log still holds (`ref show` prints the version read now).",
        explanation: "`rollback <model> --to <version>` points the environment at an earlier version of the model's Delta table (time travel); a version that was never written, or whose commit was cleaned up, cannot be read.",
    }
    ENVIRONMENTS_UNSUPPORTED = "Y015" {
        summary: "Environments are not available for this adapter or command.",
        help: "Environments run on the embedded local engine and on Trino with [adapter.nessie]; drop --ref for other adapters and for commands that do not take it.",
        explanation: "Virtual environments (pointers to Delta tables) exist on the local engine; on Trino an environment is a Nessie branch, which needs [adapter.nessie]. Trino candidates hold tables only (no view models) and take no table time travel. Commands that do not read an environment refuse --ref rather than ignore it.",
    }
    BRANCH_UNAVAILABLE = "Y016" {
        summary: "A Nessie branch or its Trino catalog could not be created, read or changed.",
        help: "Check that Nessie answers, that Trino runs with catalog.management=dynamic, and [adapter.nessie] warehouse.",
        explanation: "On Trino + Nessie a reference is a Nessie branch and a candidate is written through a catalog bound to it (phlo_<ref>_<hash>, created with CREATE CATALOG); the error names the Nessie or Trino operation that failed.",
    }
    // DOCS SITE (`docs`, W: the written site)
    DOC_OUTPUT_NOT_DOCS = "W001" {
        summary: "The folder `docs` would write holds something other than an earlier site.",
        help: "Pass --out with an empty or new folder, or one an earlier `docs` wrote.",
        explanation: "`docs` replaces its folder whole so no page of a removed model stays behind; it only does so to a folder holding its marker file `.phlo-docs`, never to one with other files.",
    }
    DOC_WRITE_FAILED = "W002" {
        summary: "A file of the documentation site could not be written.",
        help: "Choose a writable folder with --out.",
        explanation: "The message names the file and the operating system's error (permissions, a full disk).",
    }
    // DAEMON API
    API_NOT_FOUND = "API001" {
        summary: "The daemon has no such endpoint.",
        help: "GET /v1/openapi.json lists every endpoint the daemon serves; docs/daemon.md describes them.",
        explanation: "The path of an HTTP request matched none of the daemon's routes (a typo, or an endpoint of another version). Answered with status 404.",
    }
    API_METHOD_NOT_ALLOWED = "API002" {
        summary: "The endpoint exists but not for this HTTP method.",
        help: "Reads are GET; submitting and cancelling operations are POST (see /v1/openapi.json).",
        explanation: "Reads never change anything and operations never answer GET, so a method the route does not take is refused with status 405 rather than guessed.",
    }
    API_BAD_REQUEST = "API003" {
        summary: "A request's body or query parameters are malformed.",
        help: "Send a JSON body with the fields docs/daemon.md lists (`kind`, optional `selection`, `environment`), and query parameters as documented.",
        explanation: "The body is not JSON, a field has the wrong type, a required parameter is missing or a number does not parse. Answered with status 400; nothing was done.",
    }
    API_UNKNOWN_OPERATION = "API004" {
        summary: "No operation has this id.",
        help: "GET /v1/operations lists the operations this daemon's journal holds.",
        explanation: "Operation ids are the ones POST /v1/operations returned; they live in .phlo/transform/operations.jsonl, so they survive a restart of the daemon.",
    }
    API_OPERATION_FINISHED = "API005" {
        summary: "The operation has already finished and cannot be cancelled.",
        help: "Read its result with GET /v1/operations/<id>; submit a new operation to do more.",
        explanation: "Cancellation stops a queued or running operation between models (as Ctrl-C does for the command line); an operation that succeeded, failed or was cancelled keeps its outcome.",
    }
    API_WORKSPACE_UNAVAILABLE = "API006" {
        summary: "The workspace cannot be compiled at all right now.",
        help: "Fix the error in the message (usually phlo.toml); the daemon compiles again when the files change.",
        explanation: "Reads answer from the last compilation; when the workspace's configuration cannot be read there is none to answer from, and the diagnostic that stopped the compile is returned instead.",
    }
    API_OPERATION_IN_PROGRESS = "API008" {
        summary: "Another mutating operation is queued or running.",
        help: "Wait for it (GET /v1/operations/<id>) or cancel it, then submit again.",
        explanation: "The daemon runs one mutating operation at a time, as one writer per environment is the state's rule; a second submission is refused with status 409 instead of waiting unseen.",
    }
    API_OPERATION_INTERRUPTED = "API009" {
        summary: "The daemon stopped while the operation was queued or running.",
        help: "Submit the operation again; a run that had started can be continued with `resume` and its run id.",
        explanation: "Operations are journaled in .phlo/transform/operations.jsonl. One the journal still shows queued or running when a daemon starts belonged to a daemon that is gone (stopped, killed, crashed): it is marked failed with this code and never executed again.",
    }
    API_UNAUTHORIZED = "API015" {
        summary: "The request lacks the daemon's bearer token, or carries another one.",
        help: "Send `Authorization: Bearer <token>` with the token the daemon was started with (--token or PHLO_DAEMON_TOKEN).",
        explanation: "A daemon started with a token answers only /status without it, so a local process that does not know the token can neither read the workspace nor start a run. Answered with status 401.",
    }
    API_IDEMPOTENCY_KEY_REUSED = "API016" {
        summary: "An Idempotency-Key was used before for another kind or other parameters.",
        help: "Use a new key for a new submission; resend the same key only with the same request to get the first operation back.",
        explanation: "A keyed submission is journaled before it is acknowledged, and the same key with the same request returns the operation it started (never a second run, even across restarts). Keys are global to the endpoint, so the same key with other parameters is refused with status 409.",
    }
}

/// docs/codes.md: every code with its summary, help and explanation, by category.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Diagnostic codes\n\n\
         Generated from `crates/phlo-transform-core/src/diagnostic/codes.rs` (the test \
         `codes_page_is_current` fails when this page is stale; run it with \
         `PHLO_BLESS=1` to rewrite it). `phlo-transform explain-code <CODE>` prints one entry.\n\n\
         Every diagnostic carries its code, a location and a help line; `--json` carries the \
         same fields. A code is never reused for another meaning.\n",
    );
    let mut current = "";
    for info in ALL {
        if info.category() != current {
            current = info.category();
            out.push_str(&format!(
                "\n## {}{}\n",
                &current[..1].to_uppercase(),
                &current[1..]
            ));
        }
        out.push_str(&format!(
            "\n### {} `{}`\n\n{}\n\n{}\n\n**Help:** {}\n",
            info.code, info.name, info.summary, info.explanation, info.help
        ));
    }
    out.push_str("\n## Retired\n\n");
    for (code, meaning) in RETIRED {
        out.push_str(&format!("- {code}: {meaning}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn codes_are_unique_well_formed_and_in_order() {
        let mut seen = BTreeSet::new();
        for info in ALL {
            let c = info.code.0;
            let digits = c.strip_prefix("API").unwrap_or(&c[1..]);
            assert!(
                digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()),
                "{c}"
            );
            assert_ne!(info.category(), "other", "{c}");
            assert!(seen.insert(c), "{c} twice");
            assert!(!RETIRED.iter().any(|(r, _)| *r == c), "{c} is retired");
            for text in [info.summary, info.help, info.explanation] {
                assert!(!text.is_empty() && text.ends_with('.'), "{c}: {text:?}");
            }
        }
        assert_eq!(lookup("t003").map(|i| i.name), Some("INCOMPATIBLE_TYPES"));
        assert!(lookup("T999").is_none());
        let unknown = explain("T0O3").unwrap_err();
        assert_eq!(unknown.code, UNKNOWN_CODE);
        assert_eq!(unknown.suggestions, ["T003"]);
    }

    #[test]
    fn codes_page_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/codes.md");
        let page = markdown();
        if std::env::var_os("PHLO_BLESS").is_some() {
            std::fs::write(path, &page).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == page,
            "docs/codes.md is stale: run `PHLO_BLESS=1 cargo test -p phlo-transform-core codes_page_is_current`"
        );
    }
}
