/**
 * Decisions per month, the last twelve months ending with the current one (months without
 * a decision are drawn as 0, not left out), against the org's monthly limit as a dashed
 * line. An SVG sized by its viewBox: a bar keeps its width however few months have data.
 */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const SPAN = 12;
const W = 720;
const H = 240;
const PAD = { left: 44, right: 12, top: 16, bottom: 36 };

/** `2026-11` → the eleven periods before it and itself, oldest first. */
export function lastMonths(end: string, span = SPAN): string[] {
  const [y, m] = end.split('-').map(Number);
  const out: string[] = [];
  for (let i = span - 1; i >= 0; i--) {
    const index = y * 12 + (m - 1) - i;
    out.push(`${Math.floor(index / 12)}-${String((index % 12) + 1).padStart(2, '0')}`);
  }
  return out;
}

/** A round step for the value axis: 1, 2 or 5 times a power of ten, about four lines. */
function step(top: number): number {
  const raw = Math.max(1, top / 4);
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) ?? 10 * p;
}

export function UsageChart({
  items,
  period,
  used,
  limit,
}: {
  items: { period: string; decisions: number }[];
  /** The current period and what it has used so far (`GET /v1/usage/current`), when known. */
  period?: string;
  used?: number;
  limit: number | null;
}) {
  const byPeriod = new Map(items.map((i) => [i.period, i.decisions]));
  if (period && used !== undefined) byPeriod.set(period, Math.max(used, byPeriod.get(period) ?? 0));
  const now = new Date();
  const end =
    period ??
    items
      .map((i) => i.period)
      .sort()
      .at(-1) ??
    `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}`;
  const months = lastMonths(end).map((p) => ({ period: p, decisions: byPeriod.get(p) ?? 0 }));
  const s = step(Math.max(1, limit ?? 0, ...months.map((m) => m.decisions)));
  const top = Math.ceil(Math.max(1, limit ?? 0, ...months.map((m) => m.decisions)) / s) * s;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const slot = plotW / months.length;
  const barW = Math.min(40, slot * 0.6);
  const ticks: number[] = [];
  for (let v = 0; v <= top; v += s) ticks.push(v);
  const label = (p: string) => {
    const [yy, mm] = p.split('-');
    return mm === '01' || p === months[0].period ? `${MONTHS[Number(mm) - 1]} ${yy}` : MONTHS[Number(mm) - 1];
  };
  const summary = months.map((m) => `${m.period} ${m.decisions}`).join(', ');
  return (
    <figure className="usage-chart">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`Decisions per month, last ${months.length} months${limit !== null ? `, monthly limit ${limit}` : ', no monthly limit'}: ${summary}`}
      >
        {ticks.map((v) => (
          <g key={v}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} className="grid" />
            <text x={PAD.left - 6} y={y(v) + 4} textAnchor="end" className="tick">
              {v}
            </text>
          </g>
        ))}
        {months.map((m, i) => {
          const x = PAD.left + slot * i + (slot - barW) / 2;
          const over = limit !== null && m.decisions > limit;
          return (
            <g key={m.period} data-period={m.period}>
              <rect x={x} y={y(m.decisions)} width={barW} height={Math.max(0, PAD.top + plotH - y(m.decisions))} className={over ? 'bar over' : 'bar'}>
                <title>{`${m.period}: ${m.decisions} decisions`}</title>
              </rect>
              {m.decisions > 0 ? (
                <text x={x + barW / 2} y={y(m.decisions) - 4} textAnchor="middle" className="value">
                  {m.decisions}
                </text>
              ) : null}
              <text x={PAD.left + slot * i + slot / 2} y={H - PAD.bottom + 16} textAnchor="middle" className="tick">
                {label(m.period)}
              </text>
            </g>
          );
        })}
        {limit !== null ? (
          <g className="limit">
            <line x1={PAD.left} x2={W - PAD.right} y1={y(limit)} y2={y(limit)} />
            <text x={W - PAD.right} y={y(limit) - 5} textAnchor="end">
              {`limit ${limit} / month`}
            </text>
          </g>
        ) : null}
      </svg>
      <figcaption className="muted">
        Decisions opened per month{limit !== null ? `; the dashed line is the monthly limit (${limit})` : '; this org has no monthly limit'}.
      </figcaption>
    </figure>
  );
}
