//! The model DAG (petgraph): edges run upstream → downstream. Cycles are found with Tarjan's
//! algorithm and reported as a concrete path; the topological order is deterministic (Kahn's
//! algorithm, ties broken by model name).

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};

/// Nodes are model indices (models are sorted by name, so index order is name order).
#[derive(Clone, Debug, Default)]
pub struct ModelGraph {
    graph: DiGraph<usize, ()>,
}

impl ModelGraph {
    pub fn new(models: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let mut graph = DiGraph::with_capacity(models, models * 2);
        for i in 0..models {
            graph.add_node(i);
        }
        let mut seen = HashSet::new();
        for (up, down) in edges {
            if seen.insert((up, down)) {
                graph.add_edge(NodeIndex::new(up), NodeIndex::new(down), ());
            }
        }
        ModelGraph { graph }
    }

    pub fn upstream(&self, model: usize) -> Vec<usize> {
        self.neighbours(model, Direction::Incoming)
    }

    pub fn downstream(&self, model: usize) -> Vec<usize> {
        self.neighbours(model, Direction::Outgoing)
    }

    fn neighbours(&self, model: usize, dir: Direction) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .graph
            .neighbors_directed(NodeIndex::new(model), dir)
            .map(|n| n.index())
            .collect();
        v.sort_unstable();
        v
    }

    pub fn edges(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = self
            .graph
            .edge_indices()
            .filter_map(|e| self.graph.edge_endpoints(e))
            .map(|(a, b)| (a.index(), b.index()))
            .collect();
        v.sort_unstable();
        v
    }

    /// Every cycle, as a path `a → b → … → a` (first element repeated at the end), one per
    /// strongly connected component, starting from its lowest-named model.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        for scc in petgraph::algo::tarjan_scc(&self.graph) {
            let members: HashSet<usize> = scc.iter().map(|n| n.index()).collect();
            let start = *members.iter().min().expect("non-empty component");
            let self_loop = self
                .graph
                .contains_edge(NodeIndex::new(start), NodeIndex::new(start));
            if members.len() == 1 && !self_loop {
                continue;
            }
            out.push(self.shortest_cycle(start, &members));
        }
        out.sort();
        out
    }

    fn shortest_cycle(&self, start: usize, members: &HashSet<usize>) -> Vec<usize> {
        let mut parent: Vec<Option<usize>> = vec![None; self.graph.node_count()];
        let mut queue = VecDeque::new();
        for next in self.downstream(start) {
            if next == start {
                return vec![start, start];
            }
            if members.contains(&next) && parent[next].is_none() {
                parent[next] = Some(start);
                queue.push_back(next);
            }
        }
        while let Some(node) = queue.pop_front() {
            for next in self.downstream(node) {
                if next == start {
                    let mut path = vec![node];
                    while let Some(p) = parent[*path.last().expect("non-empty")] {
                        path.push(p);
                        if p == start {
                            break;
                        }
                    }
                    path.reverse();
                    path.push(start);
                    return path;
                }
                if members.contains(&next) && parent[next].is_none() {
                    parent[next] = Some(node);
                    queue.push_back(next);
                }
            }
        }
        vec![start, start]
    }

    /// Deterministic topological order of the models not on a cycle (or downstream of one).
    pub fn topological_order(&self) -> Vec<usize> {
        let n = self.graph.node_count();
        let mut indegree: Vec<usize> = (0..n)
            .map(|i| {
                self.graph
                    .neighbors_directed(NodeIndex::new(i), Direction::Incoming)
                    .count()
            })
            .collect();
        let mut ready: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| indegree[i] == 0).map(Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(i)) = ready.pop() {
            order.push(i);
            for next in self
                .graph
                .neighbors_directed(NodeIndex::new(i), Direction::Outgoing)
            {
                let j = next.index();
                indegree[j] -= 1;
                if indegree[j] == 0 {
                    ready.push(Reverse(j));
                }
            }
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topological_order_is_deterministic() {
        // 0 → 2, 1 → 2, 2 → 3
        let g = ModelGraph::new(4, [(1, 2), (0, 2), (2, 3)]);
        assert_eq!(g.topological_order(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn cycles_are_reported_as_paths() {
        // 0 → 1 → 2 → 0, and 3 alone, and 4 → 4
        let g = ModelGraph::new(5, [(0, 1), (1, 2), (2, 0), (4, 4)]);
        assert_eq!(g.cycles(), vec![vec![0, 1, 2, 0], vec![4, 4]]);
        assert_eq!(g.topological_order(), vec![3]);
    }
}
