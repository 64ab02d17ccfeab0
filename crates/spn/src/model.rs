//! The SPN itself: a validated list of nodes, children first, with one root.

use crate::validate::validate;
use crate::{Leaf, SpnError};

/// One node of an SPN. Children are indices of nodes listed earlier in the node list.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A weighted mixture of children that all have the same scope.
    Sum {
        /// Indices of the children.
        children: Vec<usize>,
        /// One non-negative weight per child, summing to 1.
        weights: Vec<f64>,
    },
    /// A factorisation: a product of children with pairwise disjoint scopes.
    Product {
        /// Indices of the children.
        children: Vec<usize>,
    },
    /// A univariate distribution over input variable `var`.
    Leaf {
        /// The input variable (0-based column of an input vector).
        var: usize,
        /// The distribution.
        dist: Leaf,
    },
}

impl Node {
    /// The children of an inner node (empty for a leaf).
    pub fn children(&self) -> &[usize] {
        match self {
            Node::Sum { children, .. } | Node::Product { children } => children,
            Node::Leaf { .. } => &[],
        }
    }

    /// "sum", "product" or the leaf's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Sum { .. } => "sum",
            Node::Product { .. } => "product",
            Node::Leaf { dist, .. } => dist.kind(),
        }
    }
}

/// A validated Sum-Product Network over `num_vars` input variables.
///
/// Constructed only through [`Spn::new`] (or the loaders built on it), so every `Spn` is a DAG
/// whose nodes are listed children first, with complete sums, decomposable products,
/// normalised weights, sane leaf parameters, every node reachable from the root and the root
/// covering every variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Spn {
    num_vars: usize,
    nodes: Vec<Node>,
    root: usize,
    name: String,
}

/// Counts describing an SPN's size and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpnStats {
    /// Input variables.
    pub vars: usize,
    /// All nodes.
    pub nodes: usize,
    /// Sum nodes.
    pub sums: usize,
    /// Product nodes.
    pub products: usize,
    /// Leaves.
    pub leaves: usize,
    /// Parent-child edges.
    pub edges: usize,
    /// Nodes on the longest path from the root to a leaf.
    pub depth: usize,
}

impl Spn {
    /// Validate and build an SPN. `root` defaults to the last node.
    pub fn new(num_vars: usize, nodes: Vec<Node>, root: Option<usize>) -> Result<Spn, SpnError> {
        let root = match root {
            Some(r) => r,
            None => nodes.len().checked_sub(1).ok_or_else(|| SpnError::model("the model has no nodes"))?,
        };
        validate(num_vars, &nodes, root)?;
        Ok(Spn { num_vars, nodes, root, name: String::new() })
    }

    /// The same SPN with a name (shown by tools; stored in the JSON file).
    pub fn with_name(mut self, name: impl Into<String>) -> Spn {
        self.name = name.into();
        self
    }

    /// The model's name (may be empty).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of input variables (the length of an input vector).
    pub fn num_vars(&self) -> usize {
        self.num_vars
    }

    /// The nodes, children first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Index of the root node.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Size and shape.
    pub fn stats(&self) -> SpnStats {
        let mut s = SpnStats { vars: self.num_vars, nodes: self.nodes.len(), ..Default::default() };
        let mut depth = vec![0usize; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            match n {
                Node::Sum { .. } => s.sums += 1,
                Node::Product { .. } => s.products += 1,
                Node::Leaf { .. } => s.leaves += 1,
            }
            s.edges += n.children().len();
            depth[i] = 1 + n.children().iter().map(|&c| depth[c]).max().unwrap_or(0);
        }
        s.depth = depth[self.root];
        s
    }

    /// The log-likelihood of one input vector (NaN marginalises a variable), computed the
    /// straightforward way: node by node in log space (log-sum-exp at sums). This is the
    /// reference the compiled evaluator falls back to and is tested against.
    ///
    /// `x` must hold [`Spn::num_vars`] values; missing values count as NaN.
    pub fn log_likelihood_reference(&self, x: &[f64], scratch: &mut Vec<f64>) -> f64 {
        scratch.clear();
        scratch.resize(self.root + 1, 0.0);
        for i in 0..=self.root {
            let v = match &self.nodes[i] {
                Node::Leaf { var, dist } => dist.log_prob(x.get(*var).copied().unwrap_or(f64::NAN)),
                Node::Product { children } => children.iter().map(|&c| scratch[c]).sum(),
                Node::Sum { children, weights } => {
                    log_sum_exp(children.iter().zip(weights).map(|(&c, &w)| (scratch[c], w)))
                }
            };
            // A product of -inf and +inf cannot occur: likelihoods are finite and >= 0.
            scratch[i] = if v.is_nan() { f64::NEG_INFINITY } else { v };
        }
        scratch[self.root]
    }
}

/// ln Σ w·exp(l) over (l, w) pairs, skipping zero weights; -inf if every term is zero.
fn log_sum_exp(terms: impl Iterator<Item = (f64, f64)> + Clone) -> f64 {
    let max = terms.clone().filter(|&(_, w)| w > 0.0).map(|(l, _)| l).fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY || max.is_nan() {
        return max;
    }
    let sum: f64 = terms.filter(|&(_, w)| w > 0.0).map(|(l, w)| w * (l - max).exp()).sum();
    max + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0.3·P(x0)P(x1) + 0.7·P'(x0)P'(x1).
    fn small() -> Spn {
        let cat = |p: &[f64]| Leaf::Categorical { probs: p.to_vec() };
        let nodes = vec![
            Node::Leaf { var: 0, dist: cat(&[0.5, 0.5]) },
            Node::Leaf { var: 1, dist: cat(&[0.25, 0.75]) },
            Node::Product { children: vec![0, 1] },
            Node::Leaf { var: 0, dist: cat(&[1.0, 0.0]) },
            Node::Leaf { var: 1, dist: Leaf::Bernoulli { p: 0.5 } },
            Node::Product { children: vec![3, 4] },
            Node::Sum { children: vec![2, 5], weights: vec![0.3, 0.7] },
        ];
        Spn::new(2, nodes, None).unwrap()
    }

    #[test]
    fn reference_log_likelihood() {
        let spn = small();
        let mut s = Vec::new();
        let p = |x0: f64, x1: f64| spn.log_likelihood_reference(&[x0, x1], &mut Vec::new()).exp();
        assert!((p(0.0, 1.0) - (0.3 * 0.5 * 0.75 + 0.7 * 0.5)).abs() < 1e-15);
        assert!((p(1.0, 1.0) - 0.3 * 0.5 * 0.75).abs() < 1e-15);
        assert!((p(f64::NAN, 0.0) - (0.3 * 0.25 + 0.7 * 0.5)).abs() < 1e-15);
        assert_eq!(spn.log_likelihood_reference(&[f64::NAN, f64::NAN], &mut s), 0.0);
        assert_eq!(spn.log_likelihood_reference(&[5.0, 0.0], &mut s), f64::NEG_INFINITY);
        let st = spn.stats();
        assert_eq!((st.sums, st.products, st.leaves, st.edges, st.depth), (1, 2, 4, 6, 3));
    }
}
