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

/**
 * Several pins in one native call, as bits: the first pin is the most significant (Espruino's
 * digitalRead of an array). One call instead of one per pin: a snapshot reads every relay at once.
 */
export function pinsRead(pins: number[]): number {
  return digitalRead(pins) as number;
}

/**
 * Run (or retune) a 50 % duty pulse train of o.freq Hz on pin. On the ESP32 this is LEDC hardware
 * PWM: a step train of thousands of Hz that JavaScript could never toggle itself. Repeated calls
 * on one pin reuse its LEDC timer. pinWrite(pin, 0) ends it (Espruino routes the pad back to GPIO).
 * The options object is the caller's, reused: nothing is allocated per call.
 */
export function pinPwm(pin: number, o: { freq: number }): void {
  analogWrite(pin, 0.5, o);
}

/** A PWM output at duty 0..1 (LEDC at o.freq Hz: a fan's or a servo's signal). `o` is made once per output. */
export function pinPwmDuty(pin: number, duty: number, o: { freq: number }): void {
  analogWrite(pin, duty, o);
}

/** setWatch; 0 when Espruino refused the pin (on the ESP32 it warns and returns nothing). */
export function pinWatch(fn: (e: WatchEvent) => void, pin: number, o: WatchOptions): number {
  return setWatch(fn, pin, o) || 0;
}

/** End a watch pinWatch made. */
export function pinUnwatch(id: number): void {
  clearWatch(id);
}

/** The ADC at pin, 0..1 of its range. */
export function adcRead(pin: number): number {
  return analogRead(pin);
}

/** Set up the I2C bus (I2C1) once at boot. */
export function i2cSetup(sda: number, scl: number, bitrate: number): void {
  I2C1.setup({ sda: sda, scl: scl, bitrate: bitrate });
}

/** Write bytes to an I2C address; false when the device did not acknowledge (Espruino throws). */
export function i2cWrite(addr: number, data: number[]): boolean {
  try {
    I2C1.writeTo(addr, data);
    return true;
  } catch (e) {
    return false;
  }
}

/** n bytes from an I2C address; null when it did not acknowledge (Espruino throws, or returns nothing or too few). */
export function i2cRead(addr: number, n: number): Uint8Array | null {
  let d: Uint8Array | undefined;
  try {
    d = I2C1.readFrom(addr, n);
  } catch (e) {
    return null;
  }
  return d && d.length >= n ? d : null;
}
