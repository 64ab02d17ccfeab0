//! Validation of an SPN: structure (a DAG listed children first, one root reaching every
//! node), scopes (complete sums, decomposable products, the root covering every variable),
//! normalised weights and sane leaf parameters. Every error names the node and the problem.

use crate::leaf::NORMALISATION_TOLERANCE;
use crate::{Node, SpnError};

/// Largest number of input variables.
pub const MAX_VARS: usize = 65_535;
/// Largest number of nodes.
pub const MAX_NODES: usize = 1 << 24;
/// Largest number of 64-bit scope words held while validating (bounds memory at 512 MiB).
const MAX_SCOPE_WORDS: usize = 1 << 26;

/// Check everything an [`Spn`](crate::Spn) promises.
pub(crate) fn validate(num_vars: usize, nodes: &[Node], root: usize) -> Result<(), SpnError> {
    if num_vars == 0 || num_vars > MAX_VARS {
        return Err(SpnError::model(format!("num_vars is {num_vars} (1..={MAX_VARS} allowed)")));
    }
    if nodes.is_empty() {
        return Err(SpnError::model("the model has no nodes"));
    }
    if nodes.len() > MAX_NODES {
        return Err(SpnError::model(format!("{} nodes is more than the {MAX_NODES} supported", nodes.len())));
    }
    if root >= nodes.len() {
        return Err(SpnError::model(format!("root {root} is not a node (there are {} nodes)", nodes.len())));
    }
    for (i, n) in nodes.iter().enumerate() {
        check_node(i, n, num_vars)?;
    }
    check_reachable(nodes, root)?;
    check_scopes(num_vars, nodes, root)
}

/// Local checks: children listed before the node, weights, leaf parameters.
fn check_node(i: usize, n: &Node, num_vars: usize) -> Result<(), SpnError> {
    let children = n.children();
    if let Some(&c) = children.iter().find(|&&c| c >= i) {
        let why =
            if c == i { "is the node itself" } else { "is not listed before it (nodes must be listed children first)" };
        return Err(SpnError::node(i, format!("child {c} {why}")));
    }
    match n {
        Node::Sum { children, weights } => {
            if children.is_empty() {
                return Err(SpnError::node(i, "sum node has no children"));
            }
            if weights.len() != children.len() {
                return Err(SpnError::node(
                    i,
                    format!("sum node has {} children but {} weights", children.len(), weights.len()),
                ));
            }
            if let Some(k) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(SpnError::node(i, format!("weight {k} is {} (must be finite and >= 0)", weights[k])));
            }
            let total: f64 = weights.iter().sum();
            if (total - 1.0).abs() > NORMALISATION_TOLERANCE {
                return Err(SpnError::node(
                    i,
                    format!("weights sum to {total}, not 1 (tolerance {NORMALISATION_TOLERANCE}): weights must be normalised"),
                ));
            }
        }
        Node::Product { children } => {
            if children.is_empty() {
                return Err(SpnError::node(i, "product node has no children"));
            }
        }
        Node::Leaf { var, dist } => {
            if *var >= num_vars {
                return Err(SpnError::node(
                    i,
                    format!("{} leaf is over variable {var} but the model has {num_vars} variables", dist.kind()),
                ));
            }
            dist.check().map_err(|e| SpnError::node(i, e))?;
        }
    }
    Ok(())
}

/// Every node must be a descendant of the root (or the root).
fn check_reachable(nodes: &[Node], root: usize) -> Result<(), SpnError> {
    let mut reached = vec![false; nodes.len()];
    reached[root] = true;
    for i in (0..=root).rev() {
        if reached[i] {
            for &c in nodes[i].children() {
                reached[c] = true;
            }
        }
    }
    match reached.iter().position(|r| !r) {
        Some(i) => Err(SpnError::node(i, format!("is not reachable from the root (node {root})"))),
        None => Ok(()),
    }
}

/// Scopes as bitsets: sums complete, products decomposable, the root covering every variable.
fn check_scopes(num_vars: usize, nodes: &[Node], root: usize) -> Result<(), SpnError> {
    let words = num_vars.div_ceil(64);
    if words.saturating_mul(nodes.len()) > MAX_SCOPE_WORDS {
        return Err(SpnError::model(format!(
            "{} nodes over {num_vars} variables is too large to validate (at most {MAX_SCOPE_WORDS} scope words)",
            nodes.len()
        )));
    }
    let mut scopes = vec![0u64; words * nodes.len()];
    let mut acc = vec![0u64; words];
    for (i, n) in nodes.iter().enumerate() {
        let (done, rest) = scopes.split_at_mut(i * words);
        let scope_of = |c: usize| &done[c * words..(c + 1) * words];
        acc.iter_mut().for_each(|w| *w = 0);
        match n {
            Node::Leaf { var, .. } => acc[var / 64] |= 1 << (var % 64),
            Node::Sum { children, .. } => {
                acc.copy_from_slice(scope_of(children[0]));
                for &c in &children[1..] {
                    if scope_of(c) != acc.as_slice() {
                        return Err(SpnError::node(
                            i,
                            format!(
                                "sum is not complete: child {} has scope {} but child {c} has scope {} (every child of a sum must cover the same variables)",
                                children[0],
                                fmt_scope(&acc),
                                fmt_scope(scope_of(c))
                            ),
                        ));
                    }
                }
            }
            Node::Product { children } => {
                for &c in children {
                    let s = scope_of(c);
                    if let Some(var) = first_common(&acc, s) {
                        let other =
                            children.iter().find(|&&o| o != c && has_var(scope_of(o), var)).copied().unwrap_or(c);
                        return Err(SpnError::node(
                            i,
                            format!(
                                "product is not decomposable: variable {var} is in the scope of child {other} and of child {c} (children of a product must have disjoint scopes)"
                            ),
                        ));
                    }
                    acc.iter_mut().zip(s).for_each(|(a, b)| *a |= b);
                }
            }
        }
        rest[..words].copy_from_slice(&acc);
    }
    let root_scope = &scopes[root * words..(root + 1) * words];
    if let Some(var) = (0..num_vars).find(|&v| !has_var(root_scope, v)) {
        return Err(SpnError::model(format!("variable {var} is not in the scope of the root: no leaf models it")));
    }
    Ok(())
}

/// True if `var` is in the bitset.
fn has_var(scope: &[u64], var: usize) -> bool {
    scope[var / 64] >> (var % 64) & 1 == 1
}

/// The lowest variable in both bitsets.
fn first_common(a: &[u64], b: &[u64]) -> Option<usize> {
    a.iter().zip(b).enumerate().find_map(|(w, (x, y))| {
        let both = x & y;
        (both != 0).then(|| w * 64 + both.trailing_zeros() as usize)
    })
}

/// A scope as "{0, 3, 7}" (at most 12 variables shown).
fn fmt_scope(scope: &[u64]) -> String {
    let vars: Vec<usize> = (0..scope.len() * 64).filter(|&v| has_var(scope, v)).collect();
    let shown: Vec<String> = vars.iter().take(12).map(|v| v.to_string()).collect();
    let more = if vars.len() > 12 { format!(", ... ({} variables)", vars.len()) } else { String::new() };
    format!("{{{}{more}}}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use crate::{Leaf, Node, Spn};

    fn leaf(var: usize) -> Node {
        Node::Leaf { var, dist: Leaf::Bernoulli { p: 0.5 } }
    }

    fn err(num_vars: usize, nodes: Vec<Node>) -> String {
        Spn::new(num_vars, nodes, None).unwrap_err().to_string()
    }

    #[test]
    fn names_each_problem() {
        let e = err(2, vec![leaf(0), Node::Product { children: vec![0, 2] }, leaf(1)]);
        assert!(e.starts_with("node 1: child 2 is not listed before it"), "{e}");
        let e = err(2, vec![leaf(0), leaf(1), Node::Sum { children: vec![0, 1], weights: vec![0.5, 0.5] }]);
        assert!(e.contains("node 2: sum is not complete: child 0 has scope {0} but child 1 has scope {1}"), "{e}");
        let e = err(1, vec![leaf(0), leaf(0), Node::Product { children: vec![0, 1] }]);
        assert!(e.contains("node 2: product is not decomposable: variable 0"), "{e}");
        let e = err(1, vec![leaf(0), leaf(0), Node::Sum { children: vec![0, 1], weights: vec![0.5, 0.6] }]);
        assert!(e.contains("node 2: weights sum to 1.1"), "{e}");
        let e = err(1, vec![leaf(0), leaf(0)]);
        assert!(e.contains("node 0: is not reachable"), "{e}");
        let e = err(2, vec![leaf(0)]);
        assert!(e.contains("variable 1 is not in the scope of the root"), "{e}");
        let e = err(1, vec![leaf(3)]);
        assert!(e.contains("node 0: bernoulli leaf is over variable 3 but the model has 1 variables"), "{e}");
        let e = err(1, vec![]);
        assert!(e.contains("no nodes"), "{e}");
        let e = Spn::new(1, vec![leaf(0)], Some(4)).unwrap_err().to_string();
        assert!(e.contains("root 4 is not a node"), "{e}");
        let e = err(2, vec![leaf(0), Node::Sum { children: vec![0], weights: vec![1.0, 0.0] }, leaf(1)]);
        assert!(e.contains("node 1: sum node has 1 children but 2 weights"), "{e}");
    }

    #[test]
    fn accepts_dags_with_shared_children() {
        let nodes = vec![
            leaf(0),
            leaf(1),
            Node::Leaf { var: 1, dist: Leaf::Bernoulli { p: 0.25 } },
            Node::Product { children: vec![0, 1] },
            Node::Product { children: vec![0, 2] },
            Node::Sum { children: vec![3, 4], weights: vec![0.5, 0.5] },
        ];
        assert!(Spn::new(2, nodes, None).is_ok());
    }
}
