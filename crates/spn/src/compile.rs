//! Compilation of an SPN into flat evaluation programs, vectorised over a batch of inputs.
//!
//! # Arithmetic: linear space with a proven guard, log space as the fallback
//!
//! The programs compute likelihoods in **linear space** (f64): a sum node is a weighted sum
//! and a product node a product, so the inner loops are multiply-adds over a batch of lanes
//! that the compiler vectorises. Log space would need an `exp` per child and a `ln` per sum
//! node (log-sum-exp), an order of magnitude more work per edge.
//!
//! Linear space is exact to a few ulps as long as nothing underflows, because every
//! operation adds or multiplies non-negative numbers (no cancellation). Underflow is the only
//! hazard (80 inputs of probability 1e-5 give 1e-400), and it is bounded at compile time: with
//! `M(n)` an upper bound of node `n`'s value over all inputs (1 at least, since a missing
//! input gives 1) and `D(n)` an upper bound of ∂root/∂n (the sum over paths of weights times
//! the `M` of sibling factors), an operation that underflows at node `n` changes the root by
//! at most `fan_in(n) · D(n) · 2^-1022` (the gap below the smallest normal number). Summing
//! over all nodes gives `E`; a linear result `r ≥ guard = E · 2^43` is then within a relative
//! 1.2e-13 of the exact value. Results below the guard (or not finite) are recomputed for that
//! input alone in log space by [`Spn::log_likelihood_reference`]. For the NIPS-like models the
//! guard is around 1e-290 (log-likelihood -667), so the fallback is rare. A model whose bound
//! `M` overflows (extremely narrow Gaussians) is evaluated in log space throughout.
//!
//! # Two programs
//!
//! - The **code program** evaluates 8-bit inputs (codes 0..=255, 256 = missing). Every
//!   sub-graph over a single variable (a leaf, or a sum of leaves of one variable) is
//!   collapsed into a table of its 257 values, so leaves cost one lookup. Tables are stored
//!   compressed: the 257 codes are mapped to the classes of equal value (a histogram with 8
//!   bins has 9 classes: 8 bins and "missing"), class maps shared by all tables that have the
//!   same one (histograms with the same breaks), and each table keeps only its class values.
//!   Per batch, each class map is applied once; a leaf lookup then reads a small table.
//! - The **value program** evaluates f64 inputs (NaN = missing) of any value, with the leaves
//!   computed directly.
//!
//! Both are a list of sum and product operations over "slots" (rows of `lanes` values), in
//! post-order from the root, with slots reused as soon as their last reader has run
//! (register allocation by liveness). Each node's children are evaluated neediest first
//! (Sethi–Ullman order; operands keep their order, so results do not change), which keeps the
//! slots live at once to about a dozen even on deep LearnSPN-shaped models of thousands of
//! nodes (10 inputs, 7,224 nodes: 13 slots, 16 in listed order; 80 inputs: 11, 14). The
//! batch is then sized so those rows fit the L1 data cache ([`CompiledSpn::cache_lanes`]).
//!
//! Tables are zero-padded to [`SMALL_TABLE`] or [`CODES`] entries, so the evaluator indexes
//! fixed-size arrays without bounds checks, and with AVX2 gathers four lanes at a time.

use crate::{Leaf, Node, Spn, SpnError};
use std::collections::HashMap;
use std::sync::Arc;

/// Code of a missing 8-bit input.
pub const MISSING: u16 = 256;
/// Number of codes: 0..=255 and [`MISSING`].
pub const CODES: usize = 257;
/// Bytes of the L1 data cache a batch's rows may fill (the tables stream through L2).
pub const L1_BUDGET: usize = 32 * 1024;
/// Length of a table of at most this many classes (others have [`CODES`] entries).
pub const SMALL_TABLE: usize = 16;

/// One operand of an operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Arg {
    /// A slot written by an earlier operation.
    Slot(u32),
    /// `tables[offset + class]`, with `class` read from class row `row`.
    Table {
        /// Class row (variables' codes first, then the derived class maps).
        row: u32,
        /// Start of the table's class values in `tables`.
        offset: u32,
        /// Number of entries: [`SMALL_TABLE`] (classes, zero-padded) or [`CODES`].
        len: u32,
    },
    /// A leaf evaluated on the f64 value of variable `var`.
    Leaf {
        /// Index in `leaves`.
        leaf: u32,
        /// The variable.
        var: u32,
    },
}

/// One operation: `slots[dst] = Π args` or `Σ weights · args`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Op {
    /// True for a sum, false for a product.
    pub sum: bool,
    /// First operand in `args` (and weight in `weights`).
    pub first: u32,
    /// Number of operands.
    pub len: u32,
    /// Destination slot.
    pub dst: u32,
}

/// A flat program over slots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Program {
    pub ops: Vec<Op>,
    pub args: Vec<Arg>,
    pub weights: Vec<f64>,
    pub slots: usize,
    pub root_slot: u32,
}

/// A class map: `classes[code]` for the codes of variable `var`.
#[derive(Debug, Clone)]
pub(crate) struct ClassMap {
    pub var: u32,
    pub classes: Vec<u16>,
}

/// Figures about a compiled model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CompileStats {
    /// Operations of the code program (8-bit inputs).
    pub code_ops: usize,
    /// Operands of the code program.
    pub code_args: usize,
    /// Slots (rows of lanes live at once) of the code program.
    pub code_slots: usize,
    /// Slots the code program would need with each node's children evaluated in the order
    /// listed rather than the neediest first (the schedule before the Sethi–Ullman pass).
    pub code_slots_unscheduled: usize,
    /// Tables (collapsed single-variable sub-graphs), after sharing identical ones.
    pub tables: usize,
    /// Bytes of table values.
    pub table_bytes: usize,
    /// Class maps applied per batch (besides the variables' own codes).
    pub class_maps: usize,
    /// Operations of the value program (f64 inputs).
    pub value_ops: usize,
    /// Slots of the value program.
    pub value_slots: usize,
    /// Slots of the value program with children evaluated in listed order.
    pub value_slots_unscheduled: usize,
    /// Linear results below this are recomputed in log space (infinite: log space only).
    pub guard: f64,
}

/// An SPN compiled for batch evaluation; share it between threads with `Arc` and give each
/// thread its own [`Evaluator`](crate::Evaluator).
#[derive(Debug)]
pub struct CompiledSpn {
    pub(crate) spn: Spn,
    pub(crate) code: Program,
    pub(crate) value: Program,
    pub(crate) class_maps: Vec<ClassMap>,
    pub(crate) tables: Vec<f64>,
    pub(crate) leaves: Vec<Leaf>,
    pub(crate) guard: f64,
    /// Slots of the code and value programs with children evaluated in listed order.
    unscheduled_slots: (usize, usize),
}

impl CompiledSpn {
    /// Compile `spn`.
    pub fn new(spn: Spn) -> Result<Arc<CompiledSpn>, SpnError> {
        let nodes = spn.nodes();
        let single = single_variable(nodes);
        // Code program: maximal single-variable sub-graphs become tables.
        let mut tabler = Tabler::new(nodes, spn.root(), &single, spn.num_vars());
        let code = build_program(
            nodes,
            spn.root(),
            |i| single[i].is_some(),
            |i| tabler.table_arg(nodes, i, single[i].unwrap_or(0)),
            true,
        )?;
        // Value program: leaves are computed directly.
        let mut leaves = Vec::new();
        let value = build_program(
            nodes,
            spn.root(),
            |i| matches!(nodes[i], Node::Leaf { .. }),
            |i| match &nodes[i] {
                Node::Leaf { var, dist } => {
                    leaves.push(dist.clone());
                    Ok(Arg::Leaf { leaf: (leaves.len() - 1) as u32, var: *var as u32 })
                }
                _ => Err(SpnError::model("internal: a terminal that is not a leaf")),
            },
            true,
        )?;
        // The slots the same programs would need with children evaluated as listed.
        let listed = |terminal: &dyn Fn(usize) -> bool| {
            build_program(nodes, spn.root(), terminal, |_| Ok(Arg::Slot(0)), false).map(|p| p.slots)
        };
        let unscheduled_slots =
            (listed(&|i| single[i].is_some())?, listed(&|i| matches!(nodes[i], Node::Leaf { .. }))?);
        let guard = guard(nodes, spn.root());
        let Tabler { class_maps, tables, .. } = tabler;
        Ok(Arc::new(CompiledSpn { spn, code, value, class_maps, tables, leaves, guard, unscheduled_slots }))
    }

    /// The model.
    pub fn spn(&self) -> &Spn {
        &self.spn
    }

    /// Number of input variables.
    pub fn num_vars(&self) -> usize {
        self.spn.num_vars()
    }

    /// Figures about the programs.
    pub fn stats(&self) -> CompileStats {
        let distinct: std::collections::HashSet<u32> = self
            .code
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Table { offset, .. } => Some(*offset),
                _ => None,
            })
            .collect();
        CompileStats {
            code_ops: self.code.ops.len(),
            code_args: self.code.args.len(),
            code_slots: self.code.slots,
            code_slots_unscheduled: self.unscheduled_slots.0,
            tables: distinct.len(),
            table_bytes: self.tables.len() * 8,
            class_maps: self.class_maps.len(),
            value_ops: self.value.ops.len(),
            value_slots: self.value.slots,
            value_slots_unscheduled: self.unscheduled_slots.1,
            guard: self.guard,
        }
    }

    /// The batch size (lanes) whose code-program working set fits [`L1_BUDGET`]: the slot
    /// rows (f64) and the class rows (u16), per lane (the value program's input rows are
    /// only touched by f64 inputs that are not bytes). Bigger batches
    /// spread each operation's fixed cost over more inputs; past the L1 data cache the rows
    /// an operation reads start to miss. A multiple of 8 in 8..=1024.
    pub fn cache_lanes(&self) -> usize {
        let rows = self.num_vars() + self.class_maps.len();
        let per_lane = 8 * self.code.slots + 2 * rows;
        (L1_BUDGET / per_lane.max(1) / 8 * 8).clamp(8, 1024)
    }

    /// True if every input is evaluated in log space (the linear bound overflowed).
    pub fn log_space_only(&self) -> bool {
        !self.guard.is_finite()
    }
}

/// For each node, the one variable of its scope, if its scope has exactly one.
fn single_variable(nodes: &[Node]) -> Vec<Option<usize>> {
    let mut single: Vec<Option<usize>> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let s = match n {
            Node::Leaf { var, .. } => Some(*var),
            // Sums are complete: every child has the first child's scope.
            Node::Sum { children, .. } => single[children[0]],
            // Decomposable products of two or more children cover two or more variables.
            Node::Product { children } if children.len() == 1 => single[children[0]],
            Node::Product { .. } => None,
        };
        single.push(s);
    }
    single
}

/// Builds tables for single-variable sub-graphs. Each variable gets one class map: the
/// coarsest partition of its 257 codes on which every table of that variable is constant
/// (for histograms sharing their breaks: the bins and "missing"), so the map is applied once
/// per batch and each table stores one value per class. Identical tables are shared.
struct Tabler {
    /// Class row of each variable (its own code row if its map would be the identity).
    row_of_var: Vec<u32>,
    /// The classes of each variable's codes.
    classes_of_var: Vec<Vec<u16>>,
    class_maps: Vec<ClassMap>,
    tables: Vec<f64>,
    table_ids: HashMap<(u32, Vec<u64>), u32>,
    memo: HashMap<usize, Arg>,
}

impl Tabler {
    /// Compute every variable's class map from the tables of the terminals (single-variable
    /// nodes read by a multi-variable parent, or the root).
    fn new(nodes: &[Node], root: usize, single: &[Option<usize>], num_vars: usize) -> Tabler {
        let mut terminals: Vec<usize> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if single[i].is_none() {
                terminals.extend(n.children().iter().copied().filter(|&c| single[c].is_some()));
            }
        }
        if single[root].is_some() {
            terminals.push(root);
        }
        terminals.sort_unstable();
        terminals.dedup();
        // Per variable and code, a signature of the values of all its tables at that code.
        let mut sig = vec![[0u64; CODES]; num_vars];
        for &t in &terminals {
            let var = single[t].unwrap_or(0);
            let values = table_values(nodes, t);
            for (s, v) in sig[var].iter_mut().zip(&values) {
                *s = mix(*s ^ v.to_bits());
            }
        }
        let mut row_of_var = Vec::with_capacity(num_vars);
        let mut classes_of_var = Vec::with_capacity(num_vars);
        let mut class_maps = Vec::new();
        for (var, s) in sig.iter().enumerate() {
            let mut ids: HashMap<u64, u16> = HashMap::new();
            let classes: Vec<u16> = s
                .iter()
                .map(|x| {
                    let next = ids.len() as u16;
                    *ids.entry(*x).or_insert(next)
                })
                .collect();
            let identity = classes.iter().enumerate().all(|(c, k)| c == usize::from(*k));
            if identity {
                row_of_var.push(var as u32);
            } else {
                row_of_var.push((num_vars + class_maps.len()) as u32);
                class_maps.push(ClassMap { var: var as u32, classes: classes.clone() });
            }
            classes_of_var.push(classes);
        }
        Tabler {
            row_of_var,
            classes_of_var,
            class_maps,
            tables: Vec::new(),
            table_ids: HashMap::new(),
            memo: HashMap::new(),
        }
    }

    /// The operand for single-variable node `t` over variable `var`.
    fn table_arg(&mut self, nodes: &[Node], t: usize, var: usize) -> Result<Arg, SpnError> {
        if let Some(a) = self.memo.get(&t) {
            return Ok(*a);
        }
        let values = table_values(nodes, t);
        let classes = &self.classes_of_var[var];
        let n_classes = classes.iter().map(|&k| usize::from(k) + 1).max().unwrap_or(0);
        let mut class_values = vec![f64::NAN; n_classes];
        let mut consistent = true;
        for (c, v) in values.iter().enumerate() {
            let k = usize::from(classes[c]);
            if class_values[k].is_nan() {
                class_values[k] = *v;
            } else if class_values[k].to_bits() != v.to_bits() {
                consistent = false;
            }
        }
        // A signature collision (never seen in practice): index the full table by code.
        let (row, class_values) = if consistent { (self.row_of_var[var], class_values) } else { (var as u32, values) };
        let key = (row, class_values.iter().map(|v| v.to_bits()).collect::<Vec<u64>>());
        // Padded to a fixed length, so the evaluator indexes a fixed-size array (no bounds
        // check, vectorisable): classes are below the class count, codes at most MISSING.
        let padded = if class_values.len() <= SMALL_TABLE { SMALL_TABLE } else { CODES };
        let offset = match self.table_ids.get(&key) {
            Some(&o) => o,
            None => {
                let o = u32::try_from(self.tables.len()).map_err(|_| SpnError::model("tables exceed 2^32 values"))?;
                self.tables.extend_from_slice(&class_values);
                self.tables.resize(self.tables.len() + padded - class_values.len(), 0.0);
                self.table_ids.insert(key, o);
                o
            }
        };
        let arg = Arg::Table { row, offset, len: padded as u32 };
        self.memo.insert(t, arg);
        Ok(arg)
    }
}

/// A 64-bit mixing function (the SplitMix64 finaliser).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 257 values (codes 0..=255, then missing) of single-variable node `t`, computed in
/// linear space over its sub-graph.
fn table_values(nodes: &[Node], t: usize) -> Vec<f64> {
    // The sub-graph's nodes, children first (ascending index is a topological order).
    let mut sub = vec![t];
    let mut seen = std::collections::HashSet::from([t]);
    let mut k = 0;
    while k < sub.len() {
        for &c in nodes[sub[k]].children() {
            if seen.insert(c) {
                sub.push(c);
            }
        }
        k += 1;
    }
    sub.sort_unstable();
    let pos: HashMap<usize, usize> = sub.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let mut vals = vec![[0f64; CODES]; sub.len()];
    for (p, &i) in sub.iter().enumerate() {
        let mut v = [0f64; CODES];
        match &nodes[i] {
            Node::Leaf { dist, .. } => {
                for (c, x) in v.iter_mut().enumerate() {
                    *x = dist.prob(if c == MISSING as usize { f64::NAN } else { c as f64 });
                }
            }
            Node::Product { children } => {
                v = [1.0; CODES];
                for c in children {
                    let cv = &vals[pos[c]];
                    v.iter_mut().zip(cv).for_each(|(a, b)| *a *= b);
                }
            }
            Node::Sum { children, weights } => {
                for (c, w) in children.iter().zip(weights) {
                    let cv = &vals[pos[c]];
                    v.iter_mut().zip(cv).for_each(|(a, b)| *a += w * b);
                }
            }
        }
        vals[p] = v;
    }
    vals[pos[&t]].to_vec()
}

/// Slots needed to evaluate each non-terminal node's sub-graph when its non-terminal children
/// are evaluated in the order of `order` (the Sethi–Ullman number of a tree): child `j` of
/// the order is evaluated while the `j` earlier results are held, and the destination is
/// taken while all of them are.
fn slot_needs(root: usize, terminal: &impl Fn(usize) -> bool, order: &[Vec<usize>]) -> Vec<u32> {
    let mut need = vec![0u32; root + 1];
    for i in 0..=root {
        if terminal(i) {
            continue;
        }
        let kids = &order[i];
        let deepest = kids.iter().enumerate().map(|(j, &c)| need[c] + j as u32).max().unwrap_or(0);
        need[i] = deepest.max(kids.len() as u32 + 1);
    }
    need
}

/// The order in which each node's non-terminal children are evaluated: as listed, or, if
/// `schedule`, the children needing the most slots first (Sethi–Ullman), which minimises the
/// slots live at once for a tree. Operands keep their listed order either way, so the
/// arithmetic (and the result, to the bit) does not depend on the schedule.
fn child_order(nodes: &[Node], root: usize, terminal: &impl Fn(usize) -> bool, schedule: bool) -> Vec<Vec<usize>> {
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); root + 1];
    for i in 0..=root {
        if terminal(i) {
            continue;
        }
        let mut kids: Vec<usize> = nodes[i].children().iter().copied().filter(|&c| !terminal(c)).collect();
        kids.dedup();
        order[i] = kids;
    }
    if schedule {
        let need = slot_needs(root, terminal, &order);
        for kids in &mut order {
            kids.sort_by_key(|&c| std::cmp::Reverse(need[c]));
        }
    }
    order
}

/// Lay out the operations for the non-terminal nodes reachable from `root` in post-order,
/// reusing slots; `terminal(i)` nodes become operands made by `make_arg(i)`. With `schedule`,
/// children are evaluated in Sethi–Ullman order ([`child_order`]).
fn build_program(
    nodes: &[Node],
    root: usize,
    terminal: impl Fn(usize) -> bool,
    mut make_arg: impl FnMut(usize) -> Result<Arg, SpnError>,
    schedule: bool,
) -> Result<Program, SpnError> {
    let mut p = Program::default();
    let mut term_args: HashMap<usize, Arg> = HashMap::new();
    let mut arg_of = |i: usize, term_args: &mut HashMap<usize, Arg>| -> Result<Arg, SpnError> {
        if let Some(a) = term_args.get(&i) {
            return Ok(*a);
        }
        let a = make_arg(i)?;
        term_args.insert(i, a);
        Ok(a)
    };
    if terminal(root) {
        p.args.push(arg_of(root, &mut term_args)?);
        p.weights.push(1.0);
        p.ops.push(Op { sum: false, first: 0, len: 1, dst: 0 });
        p.slots = 1;
        return Ok(p);
    }
    // Readers left per non-terminal node (edges from non-terminal parents).
    let mut readers = vec![0u32; nodes.len()];
    for (i, n) in nodes.iter().enumerate().take(root + 1) {
        if !terminal(i) {
            for &c in n.children() {
                if !terminal(c) {
                    readers[c] += 1;
                }
            }
        }
    }
    let order = child_order(nodes, root, &terminal, schedule);
    let mut slot_of = vec![u32::MAX; nodes.len()];
    let mut free: Vec<u32> = Vec::new();
    let mut stack = vec![(root, 0usize)];
    while let Some((i, k)) = stack.pop() {
        let children = nodes[i].children();
        if k < order[i].len() {
            stack.push((i, k + 1));
            let c = order[i][k];
            if slot_of[c] == u32::MAX {
                stack.push((c, 0));
            }
            continue;
        }
        if slot_of[i] != u32::MAX {
            continue; // Shared node reached twice before being emitted.
        }
        let first = p.args.len() as u32;
        for (j, &c) in children.iter().enumerate() {
            let arg = if terminal(c) { arg_of(c, &mut term_args)? } else { Arg::Slot(slot_of[c]) };
            p.args.push(arg);
            p.weights.push(match &nodes[i] {
                Node::Sum { weights, .. } => weights[j],
                _ => 1.0,
            });
        }
        // The destination is taken before the operands are released, so it never aliases
        // one of them (the evaluator writes it while reading them).
        let dst = free.pop().unwrap_or_else(|| {
            p.slots += 1;
            (p.slots - 1) as u32
        });
        for &c in children {
            if !terminal(c) {
                readers[c] -= 1;
                if readers[c] == 0 {
                    free.push(slot_of[c]);
                }
            }
        }
        slot_of[i] = dst;
        let len = children.len() as u32;
        p.ops.push(Op { sum: matches!(nodes[i], Node::Sum { .. }), first, len, dst });
    }
    p.root_slot = slot_of[root];
    Ok(p)
}

/// The guard of the linear evaluation (see the module documentation); infinite if the
/// bounds overflow.
fn guard(nodes: &[Node], root: usize) -> f64 {
    let mut m = vec![1.0f64; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        m[i] = match n {
            Node::Leaf { dist, .. } => dist.max_prob(),
            Node::Sum { children, .. } => children.iter().map(|&c| m[c]).fold(1.0, f64::max),
            Node::Product { children } => children.iter().map(|&c| m[c]).product(),
        };
    }
    let mut d = vec![0.0f64; nodes.len()];
    d[root] = 1.0;
    let mut e = 0.0;
    for i in (0..=root).rev() {
        let n = &nodes[i];
        e += (n.children().len() + 1) as f64 * d[i];
        match n {
            Node::Sum { children, weights } => children.iter().zip(weights).for_each(|(&c, w)| d[c] += w * d[i]),
            Node::Product { children } => {
                for &c in children {
                    d[c] += d[i] * m[i] / m[c];
                }
            }
            Node::Leaf { .. } => {}
        }
    }
    let g = e * f64::MIN_POSITIVE * 2f64.powi(43);
    if g.is_finite() && m[root].is_finite() && g < 1e-10 {
        g
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, GeneratorConfig};

    #[test]
    fn nips_like_program_is_compact() {
        let spn = generate(&GeneratorConfig::nips(10, 1)).unwrap();
        let c = CompiledSpn::new(spn.clone()).unwrap();
        let st = c.stats();
        // Histograms with shared breaks: one class map per variable.
        assert_eq!(st.class_maps, 10, "{st:?}");
        assert!(st.code_slots < 40, "{st:?}");
        assert!(st.code_ops < spn.stats().sums + spn.stats().products + 1, "{st:?}");
        assert!(st.guard > 0.0 && st.guard < 1e-280, "{st:?}");
    }

    #[test]
    fn single_leaf_model() {
        let spn = Spn::new(1, vec![Node::Leaf { var: 0, dist: Leaf::Bernoulli { p: 0.25 } }], None).unwrap();
        let c = CompiledSpn::new(spn).unwrap();
        assert_eq!((c.code.ops.len(), c.value.ops.len()), (1, 1));
    }

    #[test]
    fn narrow_gaussians_force_log_space() {
        let nodes = (0..40)
            .map(|v| Node::Leaf { var: v, dist: Leaf::Gaussian { mean: 0.0, stdev: 1e-10 } })
            .chain([Node::Product { children: (0..40).collect() }])
            .collect();
        let c = CompiledSpn::new(Spn::new(40, nodes, None).unwrap()).unwrap();
        assert!(c.log_space_only());
    }
}
