export * from './common';
export * from './endpoint';
export * from './access';
export * from './policies';
export * from './events';
export * from './decisions';
export * from './surfaces';
export * from './notifier';
