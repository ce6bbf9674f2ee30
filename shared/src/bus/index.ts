export * from './bus';
export * from './service-host';
export * from './outbox';
export * from './consumer';
export * from './permissions';
export * from './dead-letters';
export * from './invalidation';
export * from './jetstream';
