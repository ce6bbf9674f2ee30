import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_scheduler_init';
import * as m20261122000100 from './20261122000100_timers';
import * as m20261122000300 from './20261122000300_outbox_sequence';
import * as m20261126000100 from './20261126000100_outbox_lease';
import * as m20261127000000 from './20261127000000_page_room';
import * as m20261201000000 from './20261201000000_held_events';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [m20261122000000, m20261122000100, m20261122000300, m20261126000100, m20261127000000, m20261201000000];
