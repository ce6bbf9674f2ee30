import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from './dev-env';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Self time by function of one V8 CPU profile (`node --cpu-prof`), the top `n`. */
export function topFrames(file: string, n = 8): Array<{ frame: string; selfMs: number; share: number }> {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(id);
    if (!node) return;
    const f = node.callFrame;
    if (f.functionName === '(idle)' || f.functionName === '(program)') return;
    const where = f.url ? relative(ROOT, f.url.replace(/^file:\/\//, '')).replace(/^node_modules\//, '') : '';
    const key = `${f.functionName || '(anonymous)'} ${where ? `${where}:${f.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([frame, ms]) => ({ frame, selfMs: ms, share: total ? ms / total : 0 }));
}

/** The newest profile of each service in `dir` (files `<service>.<pid>….cpuprofile`). */
export function profilesIn(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.cpuprofile'))
    .sort())
    out[f.split('.')[0]!] = join(dir, f);
  return out;
}
