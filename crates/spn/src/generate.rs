//! A seeded generator of random valid SPNs of a given size and shape ("NIPS10".."NIPS80"-like
//! benchmark models over 8-bit inputs), and ancestral sampling of input vectors from a model.
//!
//! The structure follows what LearnSPN produces: a sum (clusters of rows) over products
//! (independent groups of variables), alternating, down to univariate leaves. Histogram
//! leaves share one set of integer breaks per variable (as histograms learned over a discrete
//! domain do): `bins - 1` unit-width bins at 0, 1, ... and one tail bin up to 256.

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

/// Size and shape of a generated SPN.
#[derive(Debug, Clone)]
pub struct GeneratorConfig {
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
    let mut g = Gen { cfg, rng, kinds, nodes: Vec::new() };
    let vars: Vec<usize> = (0..cfg.num_vars).collect();
    let root = g.root(&vars, cfg.target_nodes);
    let name = format!("random-{}v-{}", cfg.num_vars, cfg.seed);
    Ok(Spn::new(cfg.num_vars, g.nodes, Some(root))?.with_name(name))
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
