//! SPFlow's text export (the equation form written by classic SPFlow's
//! `spn.io.Text.spn_to_str_equation` and read by its `str_to_spn`), e.g.
//!
//! ```text
//! (0.3*((Histogram(V0|[0.,1.,2.];[0.5,0.5];[0.5,1.5]) * Categorical(V1|p=[0.2, 0.8])))
//!  + 0.7*((Gaussian(V0|mean=1.0;stdev=2.0) * Bernoulli(V1|p=0.3))))
//! ```
//!
//! Products are `(a * b * ...)`, sums `(w*(a) + w*(b) + ...)`, and a parenthesised single node
//! is that node. Leaves: `Histogram(Vi|[breaks];[densities];[representative points])`,
//! `Categorical(Vi|p=[...])`, `Gaussian(Vi|mean=..;stdev=..)`, `Bernoulli(Vi|p=..)`.
//! Variables must be named `V<index>`. SPFlow prints histogram arrays with numpy's
//! `precision=4`, so their masses only sum to 1 to about four decimals: the reader rescales
//! histogram densities, categorical probabilities and sum weights that sum to within
//! [`RENORMALISE_TOLERANCE`] of 1 so that they sum to 1 (anything further off is an error).
//! The text form is a tree: a DAG written out repeats every shared sub-graph.

use crate::{Leaf, Node, Spn, SpnError};
use std::collections::HashMap;

/// How far from 1 a sum of weights or masses may be for the reader to rescale it.
pub const RENORMALISE_TOLERANCE: f64 = 1e-2;
/// Deepest nesting of parentheses accepted.
pub const MAX_NESTING: usize = 1000;
/// Most nodes the writer emits (a DAG expanded into a tree).
pub const MAX_TREE_NODES: usize = 10_000_000;

/// Parse SPFlow's text export into a validated SPN.
pub fn from_spflow_text(text: &str) -> Result<Spn, SpnError> {
    let mut p = Parser { s: text.as_bytes(), pos: 0, nodes: Vec::new(), depth: 0, max_var: 0 };
    let root = p.node()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.err("unexpected text after the model"));
    }
    let num_vars = p.max_var + 1;
    Spn::new(num_vars, p.nodes, Some(root))
}

/// A recursive-descent parser that appends nodes children first.
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    depth: usize,
    max_var: usize,
}

impl Parser<'_> {
    /// An error at the current position.
    fn err(&self, msg: impl Into<String>) -> SpnError {
        let before = &self.s[..self.pos.min(self.s.len())];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + before.iter().rev().take_while(|&&b| b != b'\n').count();
        SpnError::Text { line, column, msg: msg.into() }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), SpnError> {
        match self.peek() {
            Some(b) if b == c => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.err(format!("expected '{}' but found '{}'", c as char, b as char))),
            None => Err(self.err(format!("expected '{}' but the text ended", c as char))),
        }
    }

    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// node := "(" ... ")" | Leaf(...)
    fn node(&mut self) -> Result<usize, SpnError> {
        match self.peek() {
            Some(b'(') => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(self.err(format!("nesting deeper than {MAX_NESTING} levels")));
                }
                let r = self.group();
                self.depth -= 1;
                r
            }
            Some(b) if b.is_ascii_alphabetic() => self.leaf(),
            Some(b) => Err(self.err(format!("expected a node ('(' or a leaf name) but found '{}'", b as char))),
            None => Err(self.err("expected a node but the text ended")),
        }
    }

    /// "(" then a sum (starts with a number), a product, or a single parenthesised node.
    fn group(&mut self) -> Result<usize, SpnError> {
        self.expect(b'(')?;
        let starts_with_number = matches!(self.peek(), Some(b'0'..=b'9' | b'.' | b'-' | b'+'));
        if starts_with_number {
            let (mut children, mut weights) = (Vec::new(), Vec::new());
            loop {
                weights.push(self.number()?);
                self.expect(b'*')?;
                children.push(self.node()?);
                match self.peek() {
                    Some(b'+') => self.pos += 1,
                    _ => break,
                }
            }
            self.expect(b')')?;
            renormalise(&mut weights).map_err(|t| self.err(format!("sum weights add up to {t}, not 1")))?;
            return Ok(self.push(Node::Sum { children, weights }));
        }
        let mut children = vec![self.node()?];
        while self.peek() == Some(b'*') {
            self.pos += 1;
            children.push(self.node()?);
        }
        self.expect(b')')?;
        Ok(if children.len() == 1 { children[0] } else { self.push(Node::Product { children }) })
    }

    fn ident(&mut self) -> String {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_') {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    /// A number as numpy or Python prints it ("0.5", "1.", "1.e-04", "-3", "2e+05").
    fn number(&mut self) -> Result<f64, SpnError> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            let sign_ok =
                (c == b'-' || c == b'+') && (self.pos == start || matches!(self.s[self.pos - 1], b'e' | b'E'));
            if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || sign_ok {
                self.pos += 1;
            } else {
                break;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
        let fixed = text.replace(".e", ".0e").replace(".E", ".0E");
        match fixed.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => {
                self.pos = start;
                let what = if text.is_empty() {
                    self.peek().map_or("the end".to_string(), |b| format!("'{}'", b as char))
                } else {
                    format!("{text:?}")
                };
                Err(self.err(format!("expected a finite number but found {what}")))
            }
        }
    }

    /// "[" numbers "]"
    fn list(&mut self) -> Result<Vec<f64>, SpnError> {
        self.expect(b'[')?;
        let mut v = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(v);
        }
        loop {
            if self.peek() == Some(b'.') && self.s[self.pos..].starts_with(b"...") {
                return Err(self.err("array shortened with '...' (numpy printed it summarised); export with np.set_printoptions(threshold=sys.maxsize)"));
            }
            v.push(self.number()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                _ => break,
            }
        }
        self.expect(b']')?;
        Ok(v)
    }

    /// name=value pairs separated by ';' up to ")" (a value is a number or a list).
    fn params(&mut self) -> Result<HashMap<String, Vec<f64>>, SpnError> {
        let mut params = HashMap::new();
        while self.peek() != Some(b')') {
            let name = self.ident();
            if name.is_empty() {
                return Err(self.err("expected a parameter name"));
            }
            self.expect(b'=')?;
            let value = if self.peek() == Some(b'[') { self.list()? } else { vec![self.number()?] };
            params.insert(name, value);
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
        }
        Ok(params)
    }

    /// Leaf(Vi|...)
    fn leaf(&mut self) -> Result<usize, SpnError> {
        let at = self.pos;
        let kind = self.ident();
        self.expect(b'(')?;
        let fname = self.ident();
        let var = match fname.strip_prefix('V').and_then(|d| d.parse::<usize>().ok()) {
            Some(v) if v < crate::validate::MAX_VARS => v,
            _ => return Err(self.err(format!("variable {fname:?} is not of the form V<index>"))),
        };
        self.max_var = self.max_var.max(var);
        self.expect(b'|')?;
        let dist = match kind.as_str() {
            "Histogram" => {
                let breaks = self.list()?;
                self.expect(b';')?;
                let mut densities = self.list()?;
                self.expect(b';')?;
                let _representative_points = self.list()?;
                if densities.len() + 1 == breaks.len() {
                    let mut masses: Vec<f64> =
                        densities.iter().zip(breaks.windows(2)).map(|(d, w)| d * (w[1] - w[0])).collect();
                    let before: f64 = masses.iter().sum();
                    renormalise(&mut masses).map_err(|t| self.err(format!("histogram masses add up to {t}, not 1")))?;
                    let scale = if before > 0.0 { masses.iter().sum::<f64>() / before } else { 1.0 };
                    densities.iter_mut().for_each(|d| *d *= scale);
                }
                Leaf::Histogram { breaks, densities }
            }
            "Categorical" => {
                let mut p = self.params()?;
                let mut probs = p.remove("p").ok_or_else(|| self.err("Categorical needs p=[...]"))?;
                renormalise(&mut probs)
                    .map_err(|t| self.err(format!("categorical probabilities add up to {t}, not 1")))?;
                Leaf::Categorical { probs }
            }
            "Gaussian" => {
                let p = self.params()?;
                let get = |k: &str| p.get(k).and_then(|v| v.first().copied());
                match (get("mean"), get("stdev")) {
                    (Some(mean), Some(stdev)) => Leaf::Gaussian { mean, stdev },
                    _ => return Err(self.err("Gaussian needs mean=...;stdev=...")),
                }
            }
            "Bernoulli" => {
                let p = self.params()?;
                match p.get("p").and_then(|v| v.first().copied()) {
                    Some(p) => Leaf::Bernoulli { p },
                    None => return Err(self.err("Bernoulli needs p=...")),
                }
            }
            other => {
                self.pos = at;
                return Err(self.err(format!(
                    "unsupported leaf type {other:?} (supported: Histogram, Categorical, Gaussian, Bernoulli)"
                )));
            }
        };
        self.expect(b')')?;
        Ok(self.push(Node::Leaf { var, dist }))
    }
}

/// Rescale `v` to sum to 1 if its sum is within [`RENORMALISE_TOLERANCE`]; else return the sum.
fn renormalise(v: &mut [f64]) -> Result<(), f64> {
    let total: f64 = v.iter().sum();
    if total.is_nan() || (total - 1.0).abs() > RENORMALISE_TOLERANCE {
        return Err(total);
    }
    v.iter_mut().for_each(|x| *x /= total);
    Ok(())
}

/// The SPN in SPFlow's text form with full-precision numbers (a DAG is expanded into a tree).
pub fn to_spflow_text(spn: &Spn) -> Result<String, SpnError> {
    let nodes = spn.nodes();
    let mut tree_size = vec![0usize; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        tree_size[i] = n.children().iter().fold(1usize, |acc, &c| acc.saturating_add(tree_size[c]));
    }
    if tree_size[spn.root()] > MAX_TREE_NODES {
        return Err(SpnError::BadSetting(format!(
            "the model expands to {} nodes as a tree, more than the {MAX_TREE_NODES} the text writer emits (SPFlow's text form cannot share nodes)",
            tree_size[spn.root()]
        )));
    }
    let mut out = String::new();
    // Explicit stack: (node, next child to write).
    let mut stack = vec![(spn.root(), 0usize)];
    while let Some((i, k)) = stack.pop() {
        match &nodes[i] {
            Node::Leaf { var, dist } => out += &leaf_text(*var, dist),
            Node::Product { children } => {
                out += if k == 0 { "(" } else { " * " };
                if k < children.len() {
                    stack.push((i, k + 1));
                    stack.push((children[k], 0));
                } else {
                    out.truncate(out.len() - 3);
                    out += ")";
                }
            }
            Node::Sum { children, weights } => {
                if k == 0 {
                    out += "(";
                } else {
                    out += ")";
                }
                if k < children.len() {
                    if k > 0 {
                        out += " + ";
                    }
                    out += &format!("{:?}*(", weights[k]);
                    stack.push((i, k + 1));
                    stack.push((children[k], 0));
                } else {
                    out += ")";
                }
            }
        }
    }
    Ok(out)
}

/// One leaf in SPFlow's text form.
fn leaf_text(var: usize, dist: &Leaf) -> String {
    let list = |v: &[f64]| format!("[{}]", v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "));
    match dist {
        Leaf::Histogram { breaks, densities } => {
            let mids: Vec<f64> = breaks.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
            format!("Histogram(V{var}|{};{};{})", list(breaks), list(densities), list(&mids))
        }
        Leaf::Categorical { probs } => format!("Categorical(V{var}|p={})", list(probs)),
        Leaf::Gaussian { mean, stdev } => format!("Gaussian(V{var}|mean={mean:?};stdev={stdev:?})"),
        Leaf::Bernoulli { p } => format!("Bernoulli(V{var}|p={p:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "(0.3*((Histogram(V0|[0.,1.,2.];[0.5,0.5];[0.5,1.5]) * Categorical(V1|p=[0.2, 0.8])))\n + 0.7*((Gaussian(V0|mean=1.0;stdev=2.0) * Bernoulli(V1|p=3.e-01))))";

    #[test]
    fn parses_spflow_equations() {
        let spn = from_spflow_text(TEXT).unwrap();
        assert_eq!(spn.num_vars(), 2);
        let st = spn.stats();
        assert_eq!((st.sums, st.products, st.leaves), (1, 2, 4));
        match &spn.nodes()[spn.root()] {
            Node::Sum { weights, .. } => assert_eq!(weights, &[0.3, 0.7]),
            n => panic!("root is {n:?}"),
        }
        assert!(spn.nodes().contains(&Node::Leaf { var: 1, dist: Leaf::Bernoulli { p: 0.3 } }));
    }

    #[test]
    fn writer_round_trips_exactly() {
        let spn = from_spflow_text(TEXT).unwrap();
        let text = to_spflow_text(&spn).unwrap();
        assert_eq!(from_spflow_text(&text).unwrap(), spn, "{text}");
    }

    #[test]
    fn rounded_histograms_are_renormalised() {
        let spn = from_spflow_text("Histogram(V0|[0.,1.,3.];[0.3333,0.3333];[0.5,2.])").unwrap();
        match &spn.nodes()[0] {
            Node::Leaf { dist: Leaf::Histogram { densities, .. }, .. } => {
                assert!((densities[0] - 1.0 / 3.0).abs() < 1e-15)
            }
            n => panic!("{n:?}"),
        }
    }

    fn err(text: &str) -> String {
        from_spflow_text(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = err("(0.5*(Bernoulli(V0|p=0.5)) + 0.5*(Poisson(V0|mean=2.0)))");
        assert!(e.contains("column 35: unsupported leaf type \"Poisson\""), "{e}");
        let e = err("(Bernoulli(V0|p=0.5) * Bernoulli(X|p=0.5))");
        assert!(e.contains("\"X\" is not of the form V<index>"), "{e}");
        let e = err("(0.5*(Bernoulli(V0|p=0.5)) + 0.2*(Bernoulli(V0|p=0.1)))");
        assert!(e.contains("sum weights add up to 0.7"), "{e}");
        let e = err("(Bernoulli(V0|p=0.5) * Bernoulli(V0|p=0.5))");
        assert!(e.contains("not decomposable"), "{e}");
        let e = err("(Bernoulli(V0|p=0.5)");
        assert!(e.contains("expected ')' but the text ended"), "{e}");
        let e = err(&("(".repeat(5000) + "Bernoulli(V0|p=0.5)" + &")".repeat(5000)));
        assert!(e.contains("nesting deeper than 1000"), "{e}");
        let e = err("Histogram(V0|[0., 1., ..., 9.];[1.];[0.5])");
        assert!(e.contains("summarised"), "{e}");
        let e = err("Bernoulli(V0|p=0.5) junk");
        assert!(e.contains("unexpected text after the model"), "{e}");
    }
}
