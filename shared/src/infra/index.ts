export * from './ports';
export * from './nats';
export * from './postgres';
