// Who may do what on the broker: each provisioned device logs in with its device id and a password
// derived from its secret (the firmware computes the same, so nothing new is stored on the rig), and
// may only read its own down topic and write its own up and status topics; the host logs in as
// HOST_USER and may use every proofrig topic. Written as a Mosquitto password file (PBKDF2-SHA512
// hashes, the `$7$` format of mosquitto_passwd 2.x) and ACL file.
import { createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { BROKER_PASS_HEX, brokerPassMessage } from '@proofrig/protocol/mqttcodec';

/** The broker user the host logs in as. */
export const HOST_USER = 'proofrig-host';
/** mosquitto_passwd's PBKDF2 iteration count. */
const PBKDF2_ITERATIONS = 101;

/** A device's broker password: hex of HMAC-SHA256(secret, brokerPassMessage(dev)), as the firmware computes it. */
export function brokerPassword(dev: string, secret: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(brokerPassMessage(dev)).digest('hex').slice(0, BROKER_PASS_HEX);
}

/** One password file line in mosquitto_passwd's `$7$` (PBKDF2-SHA512) format. */
export function passwdLine(user: string, pass: string, salt = randomBytes(12)): string {
  const hash = pbkdf2Sync(pass, salt, PBKDF2_ITERATIONS, 64, 'sha512');
  return `${user}:$7$${PBKDF2_ITERATIONS}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** Why a device id cannot be a broker user name, or null (':' ends the name in the password file). */
export function brokerUserProblem(dev: string): string | null {
  if (dev === HOST_USER) return `device id "${dev}" is the host's broker user name`;
  if (dev.includes(':')) return `device id "${dev}" contains ':', which Mosquitto's password file cannot hold in a user name`;
  return null;
}

export interface MosquittoAuth {
  passwd: string;
  acl: string;
}

/**
 * The password and ACL files for these devices and the host. Throws, naming the device, when a
 * device id cannot be a broker user name.
 */
export function mosquittoAuth(devices: { device_id: string; secret: string }[], hostPass: string): MosquittoAuth {
  const lines = [passwdLine(HOST_USER, hostPass)];
  for (const d of devices) {
    const why = brokerUserProblem(d.device_id);
    if (why) throw new Error(why);
    lines.push(passwdLine(d.device_id, brokerPassword(d.device_id, d.secret)));
  }
  const acl = [
    '# Written by `proofrig broker acl`: each device (user name = device id) only its own topics, the host all.',
    `user ${HOST_USER}`,
    'topic readwrite proofrig/#',
    '',
    'pattern read proofrig/%u/down',
    'pattern write proofrig/%u/up',
    'pattern write proofrig/%u/status',
    '',
  ].join('\n');
  return { passwd: lines.join('\n') + '\n', acl };
}
