//! A seeded generator of random valid SPNs of a given size and shape over 8-bit inputs, and
//! ancestral sampling of input vectors from a model.
//!
//! Two shapes ([`Shape`]):
//! - **NIPS-like** ([`GeneratorConfig::nips`]): a wide root sum over sub-SPNs that alternate
//!   sums and products down to leaves, a node budget split evenly; shallow (depth about 7).
//! - **LearnSPN-like** ([`GeneratorConfig::learnspn`]): the recursion LearnSPN runs on a data
//!   slice, simulated on a row count. A sum clusters the slice's rows (two or three clusters,
//!   weights the clusters' shares of the rows); a product splits the variables into independent
//!   groups, typically a few single variables (leaves) and one or two larger groups that are
//!   clustered again; a slice with too few rows becomes a naive factorisation (a product of
//!   one leaf per variable). The result is a deep chain of sums over products with most nodes
//!   leaves (for 10 inputs and 6,300 nodes: depth about 15, three leaves in four nodes).
//!
//! Histogram leaves share one set of integer breaks per variable (as histograms learned over
//! a discrete domain do): `bins - 1` unit-width bins at 0, 1, ... and one tail bin up to 256.

use crate::rng::Rng;
use crate::{Leaf, Node, Spn, SpnError};

/// The kind of leaves a generated model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeafKind {
    /// Histograms over 8-bit values (the NIPS benchmarks' leaves).
    Histogram,
    /// Categoricals over 8-bit values 0..=255.
    Categorical,
    /// Gaussians with means in 0..256.
    Gaussian,
    /// Bernoullis (inputs 0 or 1).
    Bernoulli,
    /// Each variable gets one of the four kinds, at random.
    Mixed,
}

/// The structure a generated SPN follows (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// A wide, shallow model with an evenly split node budget (the NIPS benchmarks).
    #[default]
    Nips,
    /// LearnSPN's recursion simulated on a row count: deep chains of sums over products.
    LearnSpn,
}

/// Size and shape of a generated SPN.
#[derive(Debug, Clone)]
pub struct GeneratorConfig {
    /// Structure of the model.
    pub shape: Shape,
    /// Input variables.
    pub num_vars: usize,
    /// Approximate number of nodes wanted.
    pub target_nodes: usize,
    /// Fewest and most children of a sum node.
    pub sum_children: (usize, usize),
    /// Fewest and most children of a product node.
    pub product_children: (usize, usize),
    /// Bins of a histogram leaf (2..=256).
    pub bins: usize,
    /// Kind of leaves.
    pub leaves: LeafKind,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            shape: Shape::Nips,
            num_vars: 10,
            target_nodes: 1000,
            sum_children: (2, 5),
            product_children: (2, 4),
            bins: 8,
            leaves: LeafKind::Histogram,
            seed: 1,
        }
    }
}

impl GeneratorConfig {
    /// The "NIPS`n`"-like benchmark model: `n` 8-bit inputs, histogram leaves and about
    /// 630 nodes per input (NIPS10 has about 6,300 nodes, NIPS80 about 50,000).
    pub fn nips(num_vars: usize, seed: u64) -> GeneratorConfig {
        GeneratorConfig { num_vars, target_nodes: 630 * num_vars, seed, ..Default::default() }
    }

    /// A LearnSPN-shaped model with `num_vars` 8-bit inputs and histogram leaves: 630 nodes
    /// per input up to 10 inputs (10 inputs: about 6,300 nodes, depth about 15), then 60 more
    /// per input (40 inputs: about 8,100 nodes, 80 inputs: about 10,500), as the slices
    /// LearnSPN clusters run out of rows before the variables run out.
    pub fn learnspn(num_vars: usize, seed: u64) -> GeneratorConfig {
        let target_nodes = 630 * num_vars.min(10) + 60 * num_vars.saturating_sub(10);
        GeneratorConfig {
            shape: Shape::LearnSpn,
            num_vars,
            target_nodes,
            sum_children: (2, 4),
            seed,
            ..Default::default()
        }
    }

    fn check(&self) -> Result<(), SpnError> {
        let bad = |m: String| Err(SpnError::BadSetting(m));
        if self.num_vars == 0 || self.num_vars > crate::validate::MAX_VARS {
            return bad(format!("num_vars {} is outside 1..={}", self.num_vars, crate::validate::MAX_VARS));
        }
        if self.target_nodes > 10_000_000 {
            return bad(format!("target_nodes {} is more than 10,000,000", self.target_nodes));
        }
        if self.sum_children.0 < 1 || self.sum_children.1 < self.sum_children.0 || self.sum_children.1 > 1000 {
            return bad(format!("sum_children {:?} must satisfy 1 <= min <= max <= 1000", self.sum_children));
        }
        if self.product_children.0 < 2 || self.product_children.1 < self.product_children.0 {
            return bad(format!("product_children {:?} must satisfy 2 <= min <= max", self.product_children));
        }
        if !(2..=256).contains(&self.bins) {
            return bad(format!("bins {} is outside 2..=256", self.bins));
        }
        Ok(())
    }
}

/// Generate a random valid SPN.
pub fn generate(cfg: &GeneratorConfig) -> Result<Spn, SpnError> {
    cfg.check()?;
    let mut rng = Rng::new(cfg.seed);
    let kinds: Vec<LeafKind> = (0..cfg.num_vars)
        .map(|_| match cfg.leaves {
            LeafKind::Mixed => {
                [LeafKind::Histogram, LeafKind::Categorical, LeafKind::Gaussian, LeafKind::Bernoulli][rng.range(0, 3)]
            }
            k => k,
        })
        .collect();
    let vars: Vec<usize> = (0..cfg.num_vars).collect();
    let (root, nodes) = match cfg.shape {
        Shape::Nips => {
            let mut g = Gen { cfg, rng, kinds, nodes: Vec::new() };
            (g.root(&vars, cfg.target_nodes), g.nodes)
        }
        Shape::LearnSpn => {
            let rows = learnspn_rows(cfg, &rng, &kinds);
            let mut g = Gen { cfg, rng, kinds, nodes: Vec::new() };
            (g.learn_root(&vars, rows), g.nodes)
        }
    };
    let shape = match cfg.shape {
        Shape::Nips => "random",
        Shape::LearnSpn => "learnspn",
    };
    let name = format!("{shape}-{}v-{}", cfg.num_vars, cfg.seed);
    Ok(Spn::new(cfg.num_vars, nodes, Some(root))?.with_name(name))
}

/// The row count of the simulated data set that makes a LearnSPN-shaped model of about
/// `target_nodes` nodes: a bisection on its logarithm (the node count grows with the rows),
/// each step a generation with the same seed, so the result is deterministic.
fn learnspn_rows(cfg: &GeneratorConfig, rng: &Rng, kinds: &[LeafKind]) -> f64 {
    let vars: Vec<usize> = (0..cfg.num_vars).collect();
    let nodes_for = |rows: f64| {
        let mut g = Gen { cfg, rng: rng.clone(), kinds: kinds.to_vec(), nodes: Vec::new() };
        g.learn_root(&vars, rows);
        g.nodes.len()
    };
    // log2 of rows / MIN_ROWS. Every slice of MIN_ROWS or more rows adds a node, so more
    // than twice as many such rows as target nodes is never needed.
    let (mut lo, mut hi) = (0.0f64, (2.0 * cfg.target_nodes as f64 + 2.0).log2());
    for _ in 0..16 {
        let mid = 0.5 * (lo + hi);
        if nodes_for(MIN_ROWS * mid.exp2()) < cfg.target_nodes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    MIN_ROWS * hi.exp2()
}

/// Generator state.
struct Gen<'a> {
    cfg: &'a GeneratorConfig,
    rng: Rng,
    kinds: Vec<LeafKind>,
    nodes: Vec<Node>,
}

impl Gen<'_> {
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// `n` random weights summing to 1, multiples of 1/1000 (at least 1/1000 each), so that
    /// model files stay short and readable.
    fn weights(&mut self, n: usize) -> Vec<f64> {
        let raw: Vec<f64> = (0..n).map(|_| 0.1 + 0.9 * self.rng.uniform()).collect();
        quantise(&raw, 1000)
    }

    /// The root: a sum that gets children (each at most a quarter of the target) until the
    /// model has `target` nodes; a product of leaves if the target is smaller than that.
    fn root(&mut self, scope: &[usize], target: usize) -> usize {
        let smallest = scope.len() + 1;
        if target < 2 * smallest + 1 || self.cfg.sum_children.1 < 2 {
            return self.build(scope, target, false);
        }
        let per_child = (target / 4).max(smallest);
        let mut children = Vec::new();
        while children.len() < 2 || self.nodes.len() + 1 < target {
            children.push(self.build(scope, per_child, false));
        }
        let weights = self.weights(children.len());
        self.push(Node::Sum { children, weights })
    }

    /// A sub-SPN over `scope` with at most about `budget` nodes; a sum if `sum` and there is
    /// budget for one. Recursion depth is bounded by twice the number of product levels
    /// (log2 of the variables) plus one.
    fn build(&mut self, scope: &[usize], budget: usize, sum: bool) -> usize {
        let (smin, smax) = self.cfg.sum_children;
        let k_min = smin.max(2);
        if scope.len() == 1 {
            if sum && smax >= 2 && budget > k_min && self.rng.uniform() < 0.5 {
                let k = self.rng.range(k_min, smax).min(budget - 1);
                let children: Vec<usize> = (0..k).map(|_| self.leaf(scope[0])).collect();
                let weights = self.weights(k);
                return self.push(Node::Sum { children, weights });
            }
            return self.leaf(scope[0]);
        }
        // A sum needs room for at least two fully factorised children.
        let smallest = scope.len() + 1;
        if sum && smax >= 2 && budget > 2 * smallest {
            let k = self.rng.range(k_min, smax).min((budget - 1) / smallest);
            let children: Vec<usize> = (0..k).map(|_| self.build(scope, (budget - 1) / k, false)).collect();
            let weights = self.weights(k);
            return self.push(Node::Sum { children, weights });
        }
        let (pmin, pmax) = self.cfg.product_children;
        let parts = if budget <= smallest { scope.len() } else { self.rng.range(pmin, pmax).min(scope.len()) };
        let mut vars = scope.to_vec();
        self.rng.shuffle(&mut vars);
        let mut children = Vec::with_capacity(parts);
        let rest = budget.saturating_sub(1);
        for p in 0..parts {
            let (lo, hi) = (p * vars.len() / parts, (p + 1) * vars.len() / parts);
            let share = rest * (hi - lo) / vars.len();
            children.push(self.build(&vars[lo..hi], share, true));
        }
        self.push(Node::Product { children })
    }

    /// The root of a LearnSPN-shaped model over `scope`, learned from `rows` rows.
    fn learn_root(&mut self, scope: &[usize], rows: f64) -> usize {
        match scope {
            [v] => self.learn_univariate(*v),
            _ if rows < MIN_ROWS * 2.0 => {
                let children = scope.iter().map(|&v| self.leaf(v)).collect();
                self.push(Node::Product { children })
            }
            _ => self.learn_sum(scope, rows, 0),
        }
    }

    /// LearnSPN's clustering step on a slice of `rows` rows over `scope` (two or more
    /// variables): a sum over `sum_children` clusters (weights their shares of the rows), each
    /// split into independent groups. `level` counts the sums above.
    fn learn_sum(&mut self, scope: &[usize], rows: f64, level: usize) -> usize {
        let (smin, smax) = self.cfg.sum_children;
        let k = self.rng.range(smin.max(2), smax.max(2));
        // Cluster shares: uneven, as k-means on real data gives.
        let raw: Vec<f64> = (0..k).map(|_| 0.25 + self.rng.uniform()).collect();
        let shares = quantise(&raw, 1000);
        let children = shares.iter().map(|&s| self.learn_product(scope, rows * s, level + 1)).collect();
        self.push(Node::Sum { children, weights: shares })
    }

    /// LearnSPN's splitting step on a slice over `scope` (two or more variables): a product of
    /// the variables found independent (one to a quarter of the scope; each a leaf or a
    /// univariate mixture) and one or two groups of the rest, each clustered again; if the
    /// slice has too few rows to cluster, the rest is naively factorised into leaves.
    fn learn_product(&mut self, scope: &[usize], rows: f64, level: usize) -> usize {
        let mut vars = scope.to_vec();
        self.rng.shuffle(&mut vars);
        let singles = self.rng.range(1, (vars.len() / 4).max(1)).min(vars.len() - 1);
        let rest = vars.split_off(singles);
        let mut children: Vec<usize> = vars.iter().map(|&v| self.learn_univariate(v)).collect();
        if rest.len() == 1 || rows < MIN_ROWS * 2.0 || level >= MAX_LEVELS {
            children.extend(rest.iter().map(|&v| self.leaf(v)));
        } else if rest.len() >= 4 && self.rng.uniform() < 0.25 {
            let cut = self.rng.range(2, rest.len() - 2);
            children.push(self.learn_sum(&rest[..cut], rows, level));
            children.push(self.learn_sum(&rest[cut..], rows, level));
        } else {
            children.push(self.learn_sum(&rest, rows, level));
        }
        self.push(Node::Product { children })
    }

    /// One variable split off by a product: a leaf, or (half the time, as LearnSPN clusters
    /// a univariate slice that still has rows) a mixture of two or three leaves.
    fn learn_univariate(&mut self, var: usize) -> usize {
        if self.rng.uniform() < 0.5 {
            return self.leaf(var);
        }
        let k = self.rng.range(2, 3);
        let children = (0..k).map(|_| self.leaf(var)).collect();
        let weights = self.weights(k);
        self.push(Node::Sum { children, weights })
    }

    /// A random leaf over `var`.
    fn leaf(&mut self, var: usize) -> usize {
        let dist = match self.kinds[var] {
            LeafKind::Categorical => {
                let raw: Vec<f64> = (0..256).map(|_| 0.1 + 0.9 * self.rng.uniform()).collect();
                Leaf::Categorical { probs: quantise(&raw, 10_000) }
            }
            LeafKind::Gaussian => {
                let mean = (2560.0 * self.rng.uniform()).round() / 10.0;
                Leaf::Gaussian { mean, stdev: (40.0 + 400.0 * self.rng.uniform()).round() / 10.0 }
            }
            LeafKind::Bernoulli => Leaf::Bernoulli { p: (50.0 + 900.0 * self.rng.uniform()).round() / 1000.0 },
            LeafKind::Histogram | LeafKind::Mixed => {
                let bins = self.cfg.bins;
                let mut breaks: Vec<f64> = (0..bins).map(|b| b as f64).collect();
                breaks.push(256.0);
                // Skewed masses: small values are common (as word counts are).
                let raw: Vec<f64> = (0..bins).map(|b| (0.05 + self.rng.uniform()) / (1.0 + b as f64)).collect();
                let masses = quantise(&raw, 1000);
                let densities = masses.iter().zip(breaks.windows(2)).map(|(m, w)| m / (w[1] - w[0])).collect();
                Leaf::Histogram { breaks, densities }
            }
        };
        self.push(Node::Leaf { var, dist })
    }
}

/// Rows below which a LearnSPN slice is not clustered further.
const MIN_ROWS: f64 = 200.0;
/// Most clustering levels of a LearnSPN-shaped model (bounds the recursion).
const MAX_LEVELS: usize = 64;

/// `raw` (positive) scaled to multiples of `1/units` that sum to exactly `units/units`, each at
/// least `1/units` (largest-remainder rounding). Needs `raw.len() <= units`.
fn quantise(raw: &[f64], units: usize) -> Vec<f64> {
    let n = raw.len();
    let total: f64 = raw.iter().sum();
    let spare = units.saturating_sub(n) as f64;
    let exact: Vec<f64> = raw.iter().map(|r| r / total * spare).collect();
    let mut counts: Vec<usize> = exact.iter().map(|e| 1 + e.floor() as usize).collect();
    let mut left = units.saturating_sub(counts.iter().sum());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for &i in order.iter().cycle().take(n * 2) {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts.into_iter().map(|c| c as f64 / units as f64).collect()
}

/// Draw `rows` input vectors from the model by ancestral sampling, row-major
/// (`rows × num_vars`), each value a float as the leaf produced it (integers for discrete
/// leaves); then mark each value missing (NaN) with probability `missing`.
pub fn sample(spn: &Spn, rows: usize, missing: f64, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let n = spn.num_vars();
    let mut out = vec![f64::NAN; rows * n];
    let mut stack = Vec::new();
    for r in 0..rows {
        let row = &mut out[r * n..(r + 1) * n];
        stack.clear();
        stack.push(spn.root());
        while let Some(i) = stack.pop() {
            match &spn.nodes()[i] {
                Node::Sum { children, weights } => stack.push(children[rng.pick(weights)]),
                Node::Product { children } => stack.extend_from_slice(children),
                Node::Leaf { var, dist } => row[*var] = sample_leaf(dist, &mut rng),
            }
        }
        for v in row.iter_mut() {
            if missing > 0.0 && rng.uniform() < missing {
                *v = f64::NAN;
            }
        }
    }
    out
}

/// The same as [`sample`], as 8-bit values (rounded and clamped to 0..=255) with a missing
/// mask (`true` = missing).
pub fn sample_u8(spn: &Spn, rows: usize, missing: f64, seed: u64) -> (Vec<u8>, Vec<bool>) {
    let values = sample(spn, rows, missing, seed);
    let mask: Vec<bool> = values.iter().map(|v| v.is_nan()).collect();
    let bytes = values.iter().map(|v| if v.is_nan() { 0 } else { v.round().clamp(0.0, 255.0) as u8 }).collect();
    (bytes, mask)
}

/// One value drawn from a leaf.
fn sample_leaf(dist: &Leaf, rng: &mut Rng) -> f64 {
    match dist {
        Leaf::Categorical { probs } => rng.pick(probs) as f64,
        Leaf::Histogram { breaks, densities } => {
            let masses: Vec<f64> = densities.iter().zip(breaks.windows(2)).map(|(d, w)| d * (w[1] - w[0])).collect();
            let b = rng.pick(&masses);
            let (lo, hi) = (breaks[b], breaks[b + 1]);
            let all_integer = lo.fract() == 0.0 && hi.fract() == 0.0;
            if all_integer {
                (lo + (rng.uniform() * (hi - lo)).floor()).min(hi - 1.0)
            } else {
                lo + rng.uniform() * (hi - lo)
            }
        }
        Leaf::Gaussian { mean, stdev } => mean + stdev * rng.normal(),
        Leaf::Bernoulli { p } => f64::from(rng.uniform() < *p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nips_like_sizes() {
        for n in [10, 40] {
            let spn = generate(&GeneratorConfig::nips(n, 1)).unwrap();
            let st = spn.stats();
            let target = 630 * n;
            assert!(st.nodes > target / 2 && st.nodes < target * 2, "{n} vars: {st:?}");
            assert_eq!(st.vars, n);
        }
    }

    #[test]
    fn learnspn_shape() {
        for (n, target) in [(10, 6_300), (40, 8_100), (80, 10_500)] {
            let cfg = GeneratorConfig::learnspn(n, 1);
            assert_eq!(cfg.target_nodes, target);
            let spn = generate(&cfg).unwrap();
            let st = spn.stats();
            assert_eq!(st.vars, n);
            assert!(st.nodes * 4 > target * 3 && st.nodes * 4 < target * 5, "{n} vars: {st:?}");
            // Deep chains of sums over products, most nodes leaves (LearnSPN's shape), unlike
            // the shallow NIPS-like models.
            assert!((12..=22).contains(&st.depth), "{n} vars: {st:?}");
            assert!(st.leaves * 10 > st.nodes * 6, "{n} vars: {st:?}");
            assert!(st.sums * 20 > st.nodes && st.products * 20 > st.nodes, "{n} vars: {st:?}");
            assert_eq!(st.edges + 1, st.nodes, "a tree: {st:?}");
            assert_eq!(spn, generate(&cfg).unwrap());
            assert!(spn.name().starts_with("learnspn-"));
        }
        let nips = generate(&GeneratorConfig::nips(10, 1)).unwrap().stats();
        assert!(nips.depth < 12, "{nips:?}");
        // Tiny models stay valid.
        for n in [1, 2, 3] {
            let spn = generate(&GeneratorConfig::learnspn(n, 2)).unwrap();
            assert_eq!(spn.num_vars(), n);
        }
    }

    #[test]
    fn every_leaf_kind_and_deterministic() {
        for leaves in
            [LeafKind::Histogram, LeafKind::Categorical, LeafKind::Gaussian, LeafKind::Bernoulli, LeafKind::Mixed]
        {
            let cfg = GeneratorConfig { num_vars: 7, target_nodes: 300, leaves, seed: 3, ..Default::default() };
            let a = generate(&cfg).unwrap();
            assert_eq!(a, generate(&cfg).unwrap());
            let x = sample(&a, 20, 0.1, 5);
            let mut s = Vec::new();
            for row in x.chunks(7) {
                assert!(a.log_likelihood_reference(row, &mut s).is_finite(), "{leaves:?}: {row:?}");
            }
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        let e = generate(&GeneratorConfig { bins: 1, ..Default::default() }).unwrap_err().to_string();
        assert!(e.contains("bins 1"), "{e}");
        let e = generate(&GeneratorConfig { num_vars: 0, ..Default::default() }).unwrap_err().to_string();
        assert!(e.contains("num_vars 0"), "{e}");
    }

    #[test]
    fn tiny_budgets_still_give_valid_models() {
        for target in [0, 1, 2, 5, 11, 12, 13] {
            let cfg = GeneratorConfig { num_vars: 5, target_nodes: target, ..Default::default() };
            assert!(generate(&cfg).is_ok(), "target {target}");
        }
    }
}
