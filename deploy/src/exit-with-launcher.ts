/**
 * Preloaded (`node --require`) into every service process the local launchers start
 * (`launchServices`: npm start, the bench, chaos, the cluster). Each service runs in a
 * session of its own (see `launchServices`), so a Ctrl-C or a closed terminal reaches only
 * the launcher, which stops the services itself. If the launcher is gone without doing so
 * (killed, or crashed), the service stops itself: once a second it checks that the process
 * that started it still exists, and when it does not, it sends itself SIGTERM, its usual
 * graceful shutdown. The check is a signal 0 (`kill(pid, 0)`), which delivers nothing.
 *
 * Not part of a service: a service started any other way (the image, `node main.js`) never
 * loads this file.
 */
const launcher = process.ppid;

const timer = setInterval(() => {
  try {
    process.kill(launcher, 0);
  } catch (err) {
    // EPERM: it exists, under another user. Only ESRCH means it is gone.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }
}, 1000);
// Never what keeps a process alive.
timer.unref();
