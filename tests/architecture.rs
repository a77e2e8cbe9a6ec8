//! docs/architecture.md's crate graph is the workspace's: the edges between its `crate-graph`
//! markers are the normal (not dev, not build) dependencies of each workspace member on other
//! workspace members, as `cargo metadata` reports them from the Cargo.toml files.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BEGIN: &str = "<!-- crate-graph:begin -->";
const END: &str = "<!-- crate-graph:end -->";

/// `from -> to` for every normal dependency of a workspace member on a workspace member, sorted.
fn workspace_edges(metadata: &Value) -> BTreeSet<String> {
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("`workspace_members` is an array")
        .iter()
        .map(|id| id.as_str().expect("a package id is a string"))
        .collect();
    let packages: Vec<&Value> = metadata["packages"]
        .as_array()
        .expect("`packages` is an array")
        .iter()
        .filter(|p| members.contains(p["id"].as_str().expect("a package has an id")))
        .collect();
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("a package has a name"))
        .collect();
    let mut edges = BTreeSet::new();
    for package in &packages {
        let from = package["name"].as_str().expect("a package has a name");
        for dep in package["dependencies"]
            .as_array()
            .expect("`dependencies` is an array")
        {
            let to = dep["name"].as_str().expect("a dependency has a name");
            // `kind` is null for normal dependencies, "dev" or "build" otherwise.
            if dep["kind"].is_null() && names.contains(to) {
                edges.insert(format!("{from} -> {to}"));
            }
        }
    }
    edges
}

/// The text between the markers, as docs/architecture.md must hold it.
fn block(edges: &BTreeSet<String>) -> String {
    let mut text = String::from("\n```text\n");
    for edge in edges {
        text.push_str(edge);
        text.push('\n');
    }
    text.push_str("```\n");
    text
}

#[test]
fn the_documented_crate_graph_is_the_workspace_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let edges = workspace_edges(&metadata);
    assert!(
        !edges.is_empty(),
        "no dependency between workspace members found in cargo metadata's output"
    );
    let expected = block(&edges);

    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let start = doc
        .find(BEGIN)
        .expect("docs/architecture.md has the crate-graph begin marker");
    let end = doc
        .find(END)
        .expect("docs/architecture.md has the crate-graph end marker");
    let committed = &doc[start + BEGIN.len()..end];
    assert!(
        committed == expected,
        "docs/architecture.md's crate graph differs from `cargo metadata`; between the markers it \
         should read:\n{BEGIN}{expected}{END}"
    );
}
