import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_decisions_init';
import * as m20261122000100 from './20261122000100_decisions_tables';
import * as m20261122000200 from './20261122000200_retention';
import * as m20261122000300 from './20261122000300_outbox_sequence';
import * as m20261122000400 from './20261122000400_runs';
import * as m20261123000000 from './20261123000000_timeline_notified';

import * as m20261124000000 from './20261124000000_signatures_plans';
import * as m20261124000100 from './20261124000100_timeline_skipped';
import * as m20261125000000 from './20261125000000_usage_shards';
import * as m20261126000000 from './20261126000000_open_decision';
import * as m20261126000100 from './20261126000100_outbox_lease';
import * as m20261126000200 from './20261126000200_vote_count';
import * as m20261127000000 from './20261127000000_page_room';
import * as m20261128000000 from './20261128000000_held_events';
import * as m20261129000000 from './20261129000000_policy_use';
import * as m20261130000000 from './20261130000000_later_by_key';
import * as m20261203000000 from './20261203000000_workflow_index_partial';
import * as m20261204000000 from './20261204000000_drop_approvers_gin';
import * as m20261205000000 from './20261205000000_require_facts';
import * as m20261206000000 from './20261206000000_callback_url';
import * as m20261207004600 from './20261207004600_decisions_log';
import * as m20261208000000 from './20261208000000_pending_by_policy';
import * as m20261229000000 from './20261229000000_reject_note_policy_name';
/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [
  m20261122000000,
  m20261122000100,
  m20261122000200,
  m20261122000300,
  m20261122000400,
  m20261123000000,
  m20261124000000,
  m20261124000100,
  m20261125000000,
  m20261126000000,
  m20261126000100,
  m20261126000200,
  m20261127000000,
  m20261128000000,
  m20261129000000,
  m20261130000000,
  m20261203000000,
  m20261204000000,
  m20261205000000,
  m20261206000000,
  m20261207004600,
  m20261208000000,
  m20261229000000,
];
