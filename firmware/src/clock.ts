// Time on the device: getTime() seconds turned into milliseconds, and uptime since boot.
let bootAt = 0;

/** Record the boot instant; uptime counts from here. */
export function clockInit(): void {
  bootAt = getTime();
}

export function nowMs(): number {
  return getTime() * 1000;
}

/** Whole milliseconds since clockInit(). */
export function upMs(): number {
  return Math.floor((getTime() - bootAt) * 1000);
}
