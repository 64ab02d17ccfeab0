//! The linerate SPN JSON format.
//!
//! ```json
//! {
//!   "format": "linerate-spn",
//!   "version": 1,
//!   "name": "example",
//!   "num_vars": 2,
//!   "nodes": [
//!     {"id": 0, "type": "histogram", "var": 0, "breaks": [0, 1, 256], "densities": [0.5, 0.00196078431372549]},
//!     {"id": 1, "type": "categorical", "var": 1, "probs": [0.2, 0.8]},
//!     {"id": 2, "type": "product", "children": [0, 1]},
//!     {"id": 3, "type": "gaussian", "var": 0, "mean": 10.0, "stdev": 2.5},
//!     {"id": 4, "type": "bernoulli", "var": 1, "p": 0.3},
//!     {"id": 5, "type": "product", "children": [3, 4]},
//!     {"id": 6, "type": "sum", "children": [2, 5], "weights": [0.4, 0.6]}
//!   ],
//!   "root": 6
//! }
//! ```
//!
//! - `format` must be `"linerate-spn"` and `version` 1; `name` is optional.
//! - `num_vars`: the length of an input vector; variables are numbered from 0.
//! - `nodes` are listed **children first**: a node refers to its children by their position
//!   in the list, and every child comes before its parents (so the graph is a DAG by
//!   construction). `id` is optional and, when given, must equal the node's position.
//! - `root` is optional and defaults to the last node. Every node must be reachable from it
//!   and it must cover every variable.
//! - Inner nodes: `sum` (`children`, `weights`: non-negative, summing to 1 within 1e-6; all
//!   children over the same variables) and `product` (`children` over disjoint variables).
//! - Leaves, each over one variable `var`:
//!   `categorical` (`probs`: P(x = k) for k = 0..len-1, at most 256, summing to 1; any other
//!   value has probability 0), `histogram` (`breaks`: strictly increasing edges; `densities`:
//!   one per bin `[breaks[i], breaks[i+1])`, with masses density × width summing to 1; values
//!   outside `[breaks[0], breaks[last])` have density 0; this is SPFlow's histogram leaf),
//!   `gaussian` (`mean`, `stdev` > 0) and `bernoulli` (`p` = P(x = 1)).
//! - Unknown fields are errors, so a misspelt field is reported rather than ignored.

use crate::{Leaf, Node, Spn, SpnError};
use serde::{Deserialize, Serialize};

/// The value of the `format` field.
pub const FORMAT: &str = "linerate-spn";
/// The supported `version`.
pub const VERSION: u32 = 1;

/// The file as serialised.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    format: String,
    version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    num_vars: usize,
    nodes: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    root: Option<usize>,
}

/// One node as serialised.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum NodeJson {
    Sum {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        children: Vec<usize>,
        weights: Vec<f64>,
    },
    Product {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        children: Vec<usize>,
    },
    Categorical {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        var: usize,
        probs: Vec<f64>,
    },
    Histogram {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        var: usize,
        breaks: Vec<f64>,
        densities: Vec<f64>,
    },
    Gaussian {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        var: usize,
        mean: f64,
        stdev: f64,
    },
    Bernoulli {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<usize>,
        var: usize,
        p: f64,
    },
}

impl NodeJson {
    /// The optional id and the model node.
    fn into_node(self) -> (Option<usize>, Node) {
        let leaf = |var, dist| Node::Leaf { var, dist };
        match self {
            NodeJson::Sum { id, children, weights } => (id, Node::Sum { children, weights }),
            NodeJson::Product { id, children } => (id, Node::Product { children }),
            NodeJson::Categorical { id, var, probs } => (id, leaf(var, Leaf::Categorical { probs })),
            NodeJson::Histogram { id, var, breaks, densities } => {
                (id, leaf(var, Leaf::Histogram { breaks, densities }))
            }
            NodeJson::Gaussian { id, var, mean, stdev } => (id, leaf(var, Leaf::Gaussian { mean, stdev })),
            NodeJson::Bernoulli { id, var, p } => (id, leaf(var, Leaf::Bernoulli { p })),
        }
    }

    /// The serialised form of node `i`.
    fn from_node(i: usize, n: &Node) -> NodeJson {
        let id = Some(i);
        match n.clone() {
            Node::Sum { children, weights } => NodeJson::Sum { id, children, weights },
            Node::Product { children } => NodeJson::Product { id, children },
            Node::Leaf { var, dist } => match dist {
                Leaf::Categorical { probs } => NodeJson::Categorical { id, var, probs },
                Leaf::Histogram { breaks, densities } => NodeJson::Histogram { id, var, breaks, densities },
                Leaf::Gaussian { mean, stdev } => NodeJson::Gaussian { id, var, mean, stdev },
                Leaf::Bernoulli { p } => NodeJson::Bernoulli { id, var, p },
            },
        }
    }
}

/// Parse and validate a model in the JSON format.
pub fn from_json_str(text: &str) -> Result<Spn, SpnError> {
    let file: ModelFile = serde_json::from_str(text).map_err(|e| SpnError::Json {
        line: e.line(),
        column: e.column(),
        msg: strip_position(&e),
    })?;
    if file.format != FORMAT {
        return Err(SpnError::model(format!("\"format\" is {:?}, expected {FORMAT:?}", file.format)));
    }
    if file.version != VERSION {
        return Err(SpnError::model(format!(
            "\"version\" is {}, but only version {VERSION} is supported",
            file.version
        )));
    }
    let mut nodes = Vec::with_capacity(file.nodes.len());
    for (i, n) in file.nodes.into_iter().enumerate() {
        let n: NodeJson = serde_json::from_value(n).map_err(|e| SpnError::node(i, e.to_string()))?;
        let (id, node) = n.into_node();
        if let Some(id) = id.filter(|&id| id != i) {
            return Err(SpnError::node(
                i,
                format!("\"id\" is {id} but the node is at position {i} (ids must equal positions)"),
            ));
        }
        nodes.push(node);
    }
    Ok(Spn::new(file.num_vars, nodes, file.root)?.with_name(file.name))
}

/// The model in the JSON format, one node per line; numbers round-trip exactly.
pub fn to_json_string(spn: &Spn) -> String {
    let mut out = String::from("{\n");
    out += &format!("  \"format\": {},\n  \"version\": {VERSION},\n", json_str(FORMAT));
    if !spn.name().is_empty() {
        out += &format!("  \"name\": {},\n", json_str(spn.name()));
    }
    out += &format!("  \"num_vars\": {},\n  \"nodes\": [\n", spn.num_vars());
    let lines: Vec<String> = spn
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| format!("    {}", serde_json::to_string(&NodeJson::from_node(i, n)).unwrap_or_default()))
        .collect();
    out += &lines.join(",\n");
    out += &format!("\n  ],\n  \"root\": {}\n}}\n", spn.root());
    out
}

/// A string as a JSON literal.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// serde_json's message without its trailing " at line L column C" (reported separately).
fn strip_position(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"{
      "format": "linerate-spn", "version": 1, "name": "example", "num_vars": 2,
      "nodes": [
        {"id": 0, "type": "histogram", "var": 0, "breaks": [0, 1, 256], "densities": [0.5, 0.00196078431372549]},
        {"id": 1, "type": "categorical", "var": 1, "probs": [0.2, 0.8]},
        {"id": 2, "type": "product", "children": [0, 1]},
        {"id": 3, "type": "gaussian", "var": 0, "mean": 10.0, "stdev": 2.5},
        {"id": 4, "type": "bernoulli", "var": 1, "p": 0.3},
        {"id": 5, "type": "product", "children": [3, 4]},
        {"id": 6, "type": "sum", "children": [2, 5], "weights": [0.4, 0.6]}
      ],
      "root": 6
    }"#;

    #[test]
    fn documented_example_round_trips() {
        let spn = from_json_str(EXAMPLE).unwrap();
        assert_eq!((spn.num_vars(), spn.nodes().len(), spn.name()), (2, 7, "example"));
        let again = from_json_str(&to_json_string(&spn)).unwrap();
        assert_eq!(again, spn);
    }

    fn err(text: &str) -> String {
        from_json_str(text).unwrap_err().to_string()
    }

    #[test]
    fn malformed_files_name_the_problem() {
        let e = err(&EXAMPLE.replace("\"probs\"", "\"prob\""));
        assert!(e.starts_with("node 1: unknown field `prob`, expected one of `id`, `var`, `probs`"), "{e}");
        let e = err(&EXAMPLE.replace("\"bernoulli\"", "\"poisson\""));
        assert!(e.starts_with("node 4: unknown variant `poisson`"), "{e}");
        let e = err(&EXAMPLE.replace("\"weights\": [0.4, 0.6]", "\"weights\": [0.4, 0.7]"));
        assert!(e.contains("node 6: weights sum to 1.1"), "{e}");
        let e = err(&EXAMPLE.replace("\"id\": 4", "\"id\": 9"));
        assert!(e.contains("node 4: \"id\" is 9"), "{e}");
        let e = err(&EXAMPLE.replace("linerate-spn", "other"));
        assert!(e.contains("\"format\" is \"other\""), "{e}");
        let e = err(&EXAMPLE.replace("\"stdev\": 2.5", "\"stdev\": -1"));
        assert!(e.contains("node 3: gaussian stdev is -1"), "{e}");
        let e = err("{\"format\": \"linerate-spn\", \"version\": 1, \"num_vars\": 1, \"nodes\": [");
        assert!(e.starts_with("model JSON, line 1"), "{e}");
        let e = err(&EXAMPLE.replace("\"children\": [2, 5]", "\"children\": [2, 7]"));
        assert!(e.contains("node 6: child 7 is not listed before it"), "{e}");
        let e = err(&EXAMPLE.replace("\"num_vars\": 2", "\"num_vars\": -2"));
        assert!(e.contains("invalid value: integer `-2`") && e.contains("line 2"), "{e}");
        let e = err(&EXAMPLE.replace("\"var\": 1, \"probs\"", "\"probs\""));
        assert!(e.starts_with("node 1: missing field `var`"), "{e}");
    }
}
