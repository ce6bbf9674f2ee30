import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_decisions_init';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [m20261122000000];
