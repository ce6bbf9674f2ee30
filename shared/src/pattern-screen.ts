/**
 * The static ReDoS screen of a context contract's regular expressions (`pattern`,
 * `patternProperties`). Its verdict depends on the pattern only, never on how fast or
 * busy the machine is: nothing here is timed, and the work is bounded by counts (NFA
 * states), not by a clock. What passes is still bounded at check time by the contract
 * engine's budget.
 *
 * Two analyses, both over the pattern as Ajv runs it (the `u` flag):
 * - scslre (static, the analysis behind eslint-plugin-regexp's no-super-linear-backtracking):
 *   nested and adjacent repetition that can trade characters, exponential or polynomial,
 *   and an unanchored repeat tried again at every position;
 * - ambiguity of a repeated part (refa automata): a part repeated without a small bound
 *   whose alternatives share a match (`(a|a)*`) or one of whose matches is also a run of
 *   its own matches (`(a|aa)+`, `(a?a)+`) can split one text in exponentially many ways.
 *   scslre finds exponential backtracking only as a by-product and misses these.
 * Formats (`format`) are annotations here: the engine's Ajv does not validate them, so no
 * format's regular expression ever runs on data.
 */
import { RegExpParser, visitRegExpAST, type AST } from '@eslint-community/regexpp';
import { JS, NFA, TooManyNodesError, isDisjointWith } from 'refa';
import { analyse, type Report } from 'scslre';

/**
 * Bounds on what is screened, so the screen's work is small on any machine (its cost grows
 * steeply with the number of repeats and how deeply they nest). Real patterns are far
 * inside them; a pattern outside is refused as too complex to screen, by name.
 */
export const MAX_PATTERN_LENGTH = 2000;
/** Repeats (quantifiers allowing more than SMALL_REPEAT iterations) in one pattern. */
export const MAX_REPEATS = 16;
/** Repeats inside repeats: `((a+,)*;)*` nests three deep. */
export const MAX_REPEAT_DEPTH = 4;
/** A repeat of at most this many iterations is not screened for ambiguity: 2^8 ways to split a text are cheap. */
const SMALL_REPEAT = 8;
/** Automaton states one ambiguity question may build; past it the question is left to the check budget. */
const MAX_NODES = 20_000;

const quote = (s: string) => JSON.stringify(s);

/** Why `pattern` cannot be in a contract (invalid, or catastrophic backtracking), or null. */
export function screenPattern(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return `pattern ${quote(pattern.slice(0, 40))}... is longer than ${MAX_PATTERN_LENGTH} characters, too long to screen for catastrophic backtracking; shorten it`;
  }
  let ast: { pattern: AST.Pattern; flags: AST.Flags };
  try {
    const parser = new RegExpParser({ ecmaVersion: 2025 });
    ast = { pattern: parser.parsePattern(pattern, 0, pattern.length, { unicode: true }), flags: parser.parseFlags('u') };
  } catch (err) {
    return `pattern ${quote(pattern)} is not a valid regular expression: ${(err as Error).message}`;
  }
  const shape = repeatShape(ast.pattern);
  if (shape.count > MAX_REPEATS) {
    return `pattern ${quote(pattern)} has ${shape.count} repeats (more than ${MAX_REPEATS}), too many to screen for catastrophic backtracking; simplify it`;
  }
  if (shape.depth > MAX_REPEAT_DEPTH) {
    return `pattern ${quote(pattern)} nests repeats ${shape.depth} deep (more than ${MAX_REPEAT_DEPTH}), too deep to screen for catastrophic backtracking; flatten it`;
  }
  let found: Finding | null;
  try {
    // The automata question first: it is the cheaper of the two on repeated groups.
    found = ambiguousRepeat(ast) ?? superLinear(ast);
  } catch (err) {
    // The analyses recurse over the pattern's groups.
    if (err instanceof RangeError) return `pattern ${quote(pattern)} nests groups too deeply to screen for catastrophic backtracking; flatten it`;
    throw err;
  }
  if (!found) return null;
  return `pattern ${quote(pattern)} can take ${found.how} time on some inputs (catastrophic backtracking): ${found.why}; rewrite it without nested or overlapping repetition`;
}

/** Repeats in the pattern, and how deeply they nest. */
function repeatShape(pattern: AST.Pattern): { count: number; depth: number } {
  let count = 0;
  let depth = 0;
  visitRegExpAST(pattern, {
    onQuantifierEnter(q) {
      if (q.max <= SMALL_REPEAT) return;
      count++;
      let d = 0;
      for (let n: AST.Node | null = q; n; n = n.parent) if (n.type === 'Quantifier' && n.max > SMALL_REPEAT) d++;
      depth = Math.max(depth, d);
    },
  });
  return { count, depth };
}

interface Finding {
  how: string;
  why: string;
}

function superLinear(ast: { pattern: AST.Pattern; flags: AST.Flags }): Finding | null {
  const reports = analyse(ast, { maxReports: 1 }).reports;
  const worst = reports.find((r) => r.exponential) ?? reports[0];
  if (!worst) return null;
  return { how: worst.exponential ? 'exponential' : 'polynomial', why: describe(worst) };
}

function describe(r: Report): string {
  const c = quote(r.character.pick);
  switch (r.type) {
    case 'Self':
      return `${r.quant.raw} repeats inside ${r.parentQuant.raw}, so a run of ${c} splits many ways`;
    case 'Trade':
      return `${r.startQuant.raw} and ${r.endQuant.raw} both match a run of ${c}`;
    case 'Move':
      return `${r.quant.raw} is not anchored, so it is tried again at every position of a run of ${c} (anchor it with ^)`;
  }
}

/** The first repeated part (unbounded, or more than SMALL_REPEAT times) that can match one text in more than one way. */
function ambiguousRepeat(ast: { pattern: AST.Pattern; flags: AST.Flags }): Finding | null {
  const parser = JS.Parser.fromAst(ast);
  const quantifiers: AST.Quantifier[] = [];
  visitRegExpAST(ast.pattern, { onQuantifierEnter: (q) => void quantifiers.push(q) });
  for (const q of quantifiers) {
    if (q.max <= SMALL_REPEAT) continue;
    try {
      const why = ambiguity(parser, q);
      if (why) return { how: q.max === Infinity ? 'exponential' : `polynomial (degree up to ${q.max})`, why };
    } catch (err) {
      // Too large to decide by automata within MAX_NODES: the check budget bounds it.
      if (err instanceof TooManyNodesError) continue;
      throw err;
    }
  }
  return null;
}

function ambiguity(parser: JS.Parser, q: AST.Quantifier): string | null {
  const nfa = (e: AST.Element | AST.Alternative): NFA => {
    const { expression, maxCharacter } = parser.parseElement(e, { backreferences: 'disable', assertions: 'ignore', maxNodes: MAX_NODES });
    const a = NFA.fromRegex(expression, { maxCharacter }, { assertions: 'ignore', unknowns: 'disable' }, new NFA.LimitedNodeFactory(MAX_NODES));
    // An empty match ends a repeat's iteration in JavaScript: it never splits a text.
    a.withoutEmptyWord();
    return a;
  };
  // Each alternative against the union of those before it: one question per alternative.
  const alternatives = alternativesOf(q.element).map((alt) => ({ alt, nfa: nfa(alt) }));
  const before = alternatives[0]?.nfa.copy(new NFA.LimitedNodeFactory(MAX_NODES));
  for (let i = 1; i < alternatives.length; i++) {
    const { alt, nfa: a } = alternatives[i]!;
    if (!isDisjointWith(before!, a, MAX_NODES)) {
      const other = alternatives.slice(0, i).find((b) => !isDisjointWith(b.nfa, a, MAX_NODES))!;
      return `the alternatives ${other.alt.raw} and ${alt.raw} of the repeated ${q.raw} match the same text`;
    }
    before!.unionInto(a, new NFA.LimitedNodeFactory(MAX_NODES));
  }
  const once = nfa(q.element);
  const more = once.copy(new NFA.LimitedNodeFactory(MAX_NODES));
  more.quantify(2, Infinity, new NFA.LimitedNodeFactory(MAX_NODES));
  if (!isDisjointWith(once, more, MAX_NODES)) return `in ${q.raw} one match of ${q.element.raw} is also two or more matches of it`;
  return null;
}

/** The alternatives a repeated element chooses between, through groups that only wrap. */
function alternativesOf(e: AST.QuantifiableElement): AST.Alternative[] {
  let cur: AST.Node = e;
  for (;;) {
    if ((cur.type === 'Group' || cur.type === 'CapturingGroup') && cur.alternatives.length === 1 && cur.alternatives[0]!.elements.length === 1) {
      cur = cur.alternatives[0]!.elements[0]!;
      continue;
    }
    if (cur.type === 'Group' || cur.type === 'CapturingGroup') return cur.alternatives;
    return [];
  }
}
