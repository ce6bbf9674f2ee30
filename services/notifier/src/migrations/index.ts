import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_notifier_init';
import * as m20261122000100 from './20261122000100_deliveries';
import * as m20261123000000 from './20261123000000_notifier_outbox';
import * as m20261124000000 from './20261124000000_engines_push';
import * as m20261125000000 from './20261125000000_delivery_trace';
import * as m20261126000100 from './20261126000100_outbox_lease';
import * as m20261127000000 from './20261127000000_page_room';
import * as m20261128000000 from './20261128000000_held_events';
import * as m20261206000000 from './20261206000000_callback_secrets';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [
  m20261122000000,
  m20261122000100,
  m20261123000000,
  m20261124000000,
  m20261125000000,
  m20261126000100,
  m20261127000000,
  m20261128000000,
  m20261206000000,
];
