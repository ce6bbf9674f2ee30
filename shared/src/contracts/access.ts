import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { EchoReply, EchoRequest } from './common';
import { endpoint } from './endpoint';

export const ActorLabelRequest = z.object({ org: z.string(), ref: z.string() });
export const ActorLabelReply = z.object({
  found: z.boolean(),
  kind: z.enum(['user', 'apiKey']).optional(),
  label: z.string().optional(),
  email: z.string().optional(),
});

export const AccessEndpoints = {
  echo: endpoint(SUBJECT.access.echo, EchoRequest, EchoReply),
  actorLabel: endpoint(SUBJECT.access.actorLabel, ActorLabelRequest, ActorLabelReply),
};

/** Echo endpoints of every service, for health detail and replica tests. */
export const EchoEndpoints = {
  gateway: AccessEndpoints.echo,
  decisions: endpoint(SUBJECT.decisions.echo, EchoRequest, EchoReply),
  policies: endpoint(SUBJECT.policies.echo, EchoRequest, EchoReply),
  notifier: endpoint(SUBJECT.notifier.echo, EchoRequest, EchoReply),
  surfaces: endpoint(SUBJECT.surfaces.echo, EchoRequest, EchoReply),
  scheduler: endpoint(SUBJECT.scheduler.echo, EchoRequest, EchoReply),
};
