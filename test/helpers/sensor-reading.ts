// What read_sensor and a sensor resource return (structuredContent), as the sensor specs read it.
export interface Reading {
  device_id: string;
  sensor: string;
  label: string | null;
  unit: string;
  value: number | null;
  status: string;
  measured_at: string | null;
  age_ms: number | null;
  source: 'device' | 'cache';
  command_id: string | null;
  detail: string | null;
}
