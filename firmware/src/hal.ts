// The only module that touches Espruino's pin globals. Pins are plain ESP32 GPIO numbers.

/** Make pin an output at level lv (written before and after switching mode, so it never glitches). */
export function pinOutput(pin: number, lv: number): void {
  digitalWrite(pin, lv);
  pinMode(pin, 'output');
  digitalWrite(pin, lv);
}

/** Make pin an input with the board's pull: 'up', 'down', or 'external' (none inside the chip). */
export function pinInput(pin: number, pull: string): void {
  pinMode(pin, pull === 'up' ? 'input_pullup' : pull === 'down' ? 'input_pulldown' : 'input');
}

export function pinWrite(pin: number, lv: number): void {
  digitalWrite(pin, lv);
}

/** The pin's level as 0 or 1. On an output forced with pinMode this reads the pad back. */
export function pinRead(pin: number): number {
  return digitalRead(pin) ? 1 : 0;
}
