// The sensor kind: sensor.read takes one reading of a sensor of the board (sensors.ts) and reports
// it with evidence `sensor` only when the bus answered, the CRC matched and the value is plausible.
import { checkSensorReadArgs, findSensor, sensorWorstMs } from '../sensors.js';
import type { ActionKind } from './kind.js';

export const SENSOR_READ: ActionKind = {
  action: 'sensor.read',
  motion: false,
  target: 'device',
  evidence: ['sensor'],
  check: checkSensorReadArgs,
  timing(args, board) {
    const s = findSensor(board, args.id as string)!;
    return { worstMs: sensorWorstMs(s), expectedMs: s.conversion_ms };
  },
  phrase: (a, dev) => `read sensor ${String(a.id)} of ${dev}`,
  short: (a, label) => `read ${String(a.id)}${label ? ` (${label})` : ''}`,
};
