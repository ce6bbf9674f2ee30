import type { Migration } from '@approvals/shared';
import * as m20261122000000 from './20261122000000_surfaces_init';
import * as m20261122000100 from './20261122000100_action_tokens';
import * as m20261124000000 from './20261124000000_chat';
import * as m20261124000100 from './20261124000100_webhooks';
import * as m20261210000000 from './20261210000000_chat_bound_states';
import * as m20261211000000 from './20261211000000_surfaces_outbox';
import * as m20261228000000 from './20261228000000_chat_slack_installation';

/** Ordered list of this service's migrations. Append; never edit one that has shipped. */
export const migrations: Migration[] = [m20261122000000, m20261122000100, m20261124000000, m20261124000100, m20261210000000, m20261211000000, m20261228000000];
