import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { EchoReply, EchoRequest } from './common';
import { endpoint } from './endpoint';

export const ApiKeyLabelRequest = z.object({ org: z.string(), keyId: z.string() });
export const ApiKeyLabelReply = z.object({ found: z.boolean(), label: z.string().optional() });

export const AccessEndpoints = {
  echo: endpoint(SUBJECT.access.echo, EchoRequest, EchoReply),
  apiKeyLabel: endpoint(SUBJECT.access.apiKeyLabel, ApiKeyLabelRequest, ApiKeyLabelReply),
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
