// Integer option values for commander, refused with a message that names the option and its range.
import { InvalidArgumentError } from 'commander';

export function intArg(name: string, min: number, max: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer ${min}..${max}, got "${v}"`);
    return n;
  };
}
