export * from './addresses';
export * from './outbound';
