export * from './addresses';
export * from './outbound';
export * from './browser-binding';
