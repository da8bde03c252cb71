// ggml's graph allocator replayed: the cases its rules decide (ggml-alloc.c), worked by hand.
import { describe, expect, it } from 'vitest';
import { ComputeGraph } from '../../lib/estimate/compute-graph.js';

describe('graph allocator', () => {
  it('a freed tensor leaves a hole the next tensor that fits takes (best fit), not the end', () => {
    const g = new ComputeGraph();
    const a = g.op(64, [g.external], 'a');
    const b = g.op(64, [a], 'b'); // a dies here: [0, 64) free
    const c = g.op(32, [b], 'c'); // fits the hole: at 0
    g.expand(g.op(32, [c], 'd', { output: true })); // at 32, in what is left of the hole
    expect(g.nodes.length).toBe(4);
    expect(g.allocate()).toBe(128);
  });

  it('an in-place op takes over its source when that source has no other reader', () => {
    const g = new ComputeGraph();
    const a = g.op(100, [g.external], 'f32:25');
    const b = g.op(100, [a], 'f32:25', { inplace: true });
    g.expand(g.op(100, [b], 'f32:25', { inplace: true, output: true }));
    // one 100-byte tensor, aligned to 32
    expect(g.allocate()).toBe(128);
  });

  it('a source with another reader is not taken over, nor one of another layout', () => {
    const g = new ComputeGraph();
    const a = g.op(64, [g.external], 'x');
    const b = g.op(64, [a], 'x', { inplace: true }); // a is read again below: b at 64
    g.expand(g.op(64, [b, a], 'x', { inplace: true, output: true })); // b's last reader: takes b's memory
    expect(g.allocate()).toBe(128);

    const other = new ComputeGraph();
    other.expand(other.op(64, [other.op(64, [other.external], 'x')], 'y', { inplace: true, output: true }));
    expect(other.allocate()).toBe(128);
    const same = new ComputeGraph();
    same.expand(same.op(64, [same.op(64, [same.external], 'x')], 'x', { inplace: true, output: true }));
    expect(same.allocate()).toBe(64);
  });

  it('inputs are placed first and kept until their last reader; a view keeps its source alive', () => {
    const g = new ComputeGraph();
    const input = g.input(96);
    const a = g.expand(g.op(64, [g.external, input], 'a')); // the input dies here
    const view = g.view(a, 'a-view');
    g.expand(g.op(32, [g.external], 'b')); // the input's hole (96) takes b
    g.expand(g.op(32, [view], 'c', { output: true })); // a dies only now
    expect(g.leafs.length).toBe(1);
    expect(g.allocate()).toBe(160);
  });

  it('expand orders a node after its sources, depth first, left to right, each once', () => {
    const g = new ComputeGraph();
    const a = g.op(32, [g.external], 'a');
    const b = g.op(32, [a], 'b');
    const c = g.op(32, [a], 'c');
    const d = g.expand(g.op(32, [c, b], 'd'));
    expect(g.nodes).toEqual([a, c, b, d]);
  });
});
