//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 document, written by hand in `openapi.json`
//! beside this file. The tests check it against the route table and real responses.

/// The document.
pub fn document() -> serde_json::Value {
    serde_json::from_str(include_str!("openapi.json")).expect("openapi.json is JSON")
}
