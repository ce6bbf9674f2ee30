import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_access_init';
import * as m20261203000000 from './20261203000000_members';
import * as m20261212000000 from './20261212000000_sign_in_links';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [m20261122000000, m20261203000000, m20261212000000];
