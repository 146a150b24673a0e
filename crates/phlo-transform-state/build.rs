//! `sqlx::migrate!` embeds the migration folders at compile time; without this a new or edited
//! migration would not rebuild the crate (sqlx's documented build-script fix).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=migrations_postgres");
}
