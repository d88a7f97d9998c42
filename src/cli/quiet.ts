// Keeps Dawn's own chatter (Vulkan loader and driver warnings that native code prints straight to file
// descriptor 2, e.g. with no GPU driver) out of the CLI's messages: the CLI runs its work in a child process
// whose stderr is captured, and writes its own messages (errors, progress) to descriptor 3, which the parent
// passes on. `--verbose` passes Dawn's lines on too.
import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';

const CHILD_ENV = 'NEOX_CLI_CHILD';

/** True in the child that does the work. */
export function isWorker(): boolean {
  return process.env[CHILD_ENV] === '1';
}

/** Writes one of the CLI's own messages: to descriptor 3 in the child, else to stderr. */
export function say(line: string): void {
  if (isWorker()) writeSync(3, `${line}\n`);
  else process.stderr.write(`${line}\n`);
}

/**
 * Runs this same script in a child with `args`, passing stdout through, our messages (descriptor 3) to stderr,
 * and the child's own stderr only when `verbose`. Resolves to the child's exit status.
 */
export function runQuietChild(args: string[], verbose: boolean): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...args], {
      env: { ...process.env, [CHILD_ENV]: '1' },
      stdio: ['inherit', 'inherit', 'pipe', 'pipe'],
    });
    let said = false;
    child.stdio[3]?.on('data', (b: Buffer) => {
      said = true;
      process.stderr.write(b);
    });
    const chatter: Buffer[] = [];
    child.stderr?.on('data', (b: Buffer) => {
      if (verbose) process.stderr.write(b);
      else chatter.push(b);
    });
    const forward = (sig: NodeJS.Signals) => () => child.kill(sig);
    process.on('SIGINT', forward('SIGINT'));
    process.on('SIGTERM', forward('SIGTERM'));
    child.on('error', (e) => {
      process.stderr.write(`error: could not start the CLI's worker process (${e.message})\n`);
      resolve(3);
    });
    child.on('close', (code, signal) => {
      if (code !== 0 && code !== 1 && !said) {
        // It died without a word of ours (a crash in native code): say so, on one line.
        const why = signal ? `signal ${signal}` : `exit status ${code}`;
        process.stderr.write(
          `error: the GPU process ended with ${why}; run with --verbose to see its output\n`,
        );
      }
      resolve(code ?? 3);
    });
  });
}
