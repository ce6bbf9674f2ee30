import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_policies_init';
import * as m20261122000100 from './20261122000100_policies_tables';
import * as m20261122000300 from './20261122000300_outbox_sequence';
import * as m20261126000100 from './20261126000100_outbox_lease';
import * as m20261127000000 from './20261127000000_page_room';
import * as m20261202000000 from './20261202000000_drop_decision_usage';
import * as m20261203000000 from './20261203000000_org_settings';
import * as m20261230000000 from './20261230000000_approvers_by_email';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [
  m20261122000000,
  m20261122000100,
  m20261122000300,
  m20261126000100,
  m20261127000000,
  m20261202000000,
  m20261203000000,
  m20261230000000,
];
