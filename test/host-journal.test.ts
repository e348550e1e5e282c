// The journal: what is written is what comes back, across a restart too; the history of each
// command; the lookups the host core decides with (request_id dedupe, the last motion of an axis,
// open commands); the filters of list_commands; devices and their events; retention. The same
// contract on both backends: a SQLite file, and PostgreSQL (where installed). The journal as a file
// (permissions, size, older versions, group commit) is host-journal-file.test.ts.
import Database from 'better-sqlite3';
import { beforeEach, describe, expect, it } from 'vitest';
import { blankCommand, type CommandRecord } from '../host/src/core/journal/records.js';
import { momentRefusal } from '../host/src/core/journal/schema.js';
import { momentCodes } from '@proofrig/protocol';
import { board, STATE, DAY, path, j, full, blank, reopen, useJournal, BACKENDS, server } from './helpers/journal-fixture.js';

describe.each(BACKENDS)('the journal on %s', (backend) => {
  useJournal(backend);

  describe('what is written comes back exactly, also after a restart', () => {
    it('an open command with every field set', () => {
      const c = full();
      j.insert(c);
      expect(j.get(c.command_id)).toStrictEqual(c);
      reopen();
      expect(j.get(c.command_id)).toStrictEqual(c);
      expect(j.open()).toStrictEqual([c]);
      expect(j.byRequest('rig1', c.request_id)).toStrictEqual(c);
    });

    it('a terminal command with every field set, and one with every field blank', () => {
      const a = full({ state: 'failed', terminal_at: 2000 });
      const b = blank({ state: 'rejected', terminal_at: 1000 });
      j.insert(a);
      j.insert(b);
      reopen();
      expect(j.get(a.command_id)).toStrictEqual(a);
      expect(j.get(b.command_id)).toStrictEqual(b);
      expect(j.open()).toStrictEqual([]);
    });

    it('an update lands, whether the command was written by this process or read back after a restart', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      j.update({ ...c, state: 'running', accepted: true, progress: 10, updated_at: 1200 }, true);
      expect(j.get(c.command_id)).toMatchObject({ state: 'running', accepted: true, progress: 10, updated_at: 1200 });
      reopen();
      const done = { ...j.get(c.command_id)!, state: 'completed' as const, executed: true, verified: true, evidence: 'aux_contact' as const, terminal_at: 1300, updated_at: 1300 };
      j.update(done, true);
      reopen();
      expect(j.get(c.command_id)).toStrictEqual(done);
    });

    it('a caller changing its record after writing does not change the journal’s copy', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      c.state = 'running';
      const got = j.get(c.command_id)!;
      expect(got.state).toBe('sent');
      got.state = 'failed';
      expect(j.get(c.command_id)!.state).toBe('sent');
      expect(j.open()[0].state).toBe('sent');
    });

    it('an unknown command id is undefined', () => {
      expect(j.get('cmd_nope')).toBeUndefined();
      expect(j.byRequest('rig1', 'nope')).toBeUndefined();
    });
  });

  describe('the history of a command', () => {
    it('insert records the first state; a state change, or a note, adds an event; a write with neither adds none', () => {
      const c = blank({ state: 'submitted', updated_at: 1000 });
      j.insert(c, 'hello');
      j.update({ ...c, state: 'sent', updated_at: 1100 }, true, 'deadline 700 ms');
      j.update({ ...c, state: 'sent', progress: 5, updated_at: 1150 }, false);
      j.update({ ...c, state: 'sent', progress: 5, updated_at: 1200 }, false, 'asked the device');
      j.update({ ...c, state: 'running', progress: 5, updated_at: 1250 }, true);
      expect(j.events(c.command_id)).toStrictEqual([
        { at: 1000, state: 'submitted', note: 'hello' },
        { at: 1100, state: 'sent', note: 'deadline 700 ms' },
        { at: 1200, state: 'sent', note: 'asked the device' },
        { at: 1250, state: 'running', note: null },
      ]);
      expect(j.get(c.command_id)!.progress).toBe(5);
    });

    it('rewriting an unchanged record changes nothing, adds no event, and does not touch the file (or the row in PostgreSQL)', async () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      // SQLite: data_version changes for a reader whenever another connection commits a change to the file.
      // PostgreSQL: a row's xmin is the transaction that wrote its current version.
      const reader = backend === 'sqlite' ? new Database(path, { readonly: true }) : undefined;
      const pgc = backend === 'postgres' ? await server!.client(new URL(path).pathname.slice(1)) : undefined;
      const version = async () =>
        reader ? reader.pragma('data_version', { simple: true }) : (await pgc!.query('SELECT xmin FROM commands WHERE command_id = $1', [c.command_id])).rows[0].xmin;
      const v0 = await version();
      j.update({ ...c }, false);
      expect(await version()).toBe(v0);
      expect(j.events(c.command_id)).toHaveLength(1);
      expect(j.get(c.command_id)).toStrictEqual(c);
      j.update({ ...c, progress: 3 }, false);
      expect(await version()).not.toBe(v0);
      reader?.close();
      await pgc?.end();
    });

    it('an update with no state change and no note still lands, without an event', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      j.update({ ...c, progress: 7, updated_at: 1100 }, false);
      expect(j.get(c.command_id)).toMatchObject({ progress: 7, updated_at: 1100 });
      reopen();
      expect(j.get(c.command_id)).toMatchObject({ progress: 7, updated_at: 1100 });
      expect(j.events(c.command_id)).toHaveLength(1);
    });

    it('a note on an unchanged record adds its event', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      j.update({ ...c }, false, 'asked the device');
      expect(j.events(c.command_id)).toStrictEqual([
        { at: 1000, state: 'sent', note: null },
        { at: 1000, state: 'sent', note: 'asked the device' },
      ]);
    });

    it('the same columns changed without a note, then with one, both land (and the note is its event)', () => {
      const c = blank({ state: 'running' });
      j.insert(c);
      j.update({ ...c, progress: 10, position: 1.5, updated_at: 1100 }, false);
      j.update({ ...c, progress: 20, position: 3, updated_at: 1200 }, false, 'half way');
      j.update({ ...c, progress: 30, position: 4.5, updated_at: 1300 }, false);
      reopen();
      expect(j.get(c.command_id)).toMatchObject({ progress: 30, position: 4.5, updated_at: 1300 });
      expect(j.events(c.command_id).map((e) => e.note)).toEqual([null, 'half way']);
    });

    it('a change undone within one batch writes nothing and fails nothing', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      const other = blank();
      j.group(() => {
        j.update({ ...c, progress: 5, updated_at: 1100 }, false);
        j.update({ ...c }, false);
        // In the same batch: it commits with it (a failing statement would roll the batch back).
        j.insert(other);
      });
      reopen();
      expect(j.get(c.command_id)).toStrictEqual(c);
      expect(j.get(other.command_id)).toStrictEqual(other);
    });

    it('updates that change different columns of one command, one after another, all land', () => {
      const c = blank({ state: 'sent' });
      j.insert(c);
      j.update({ ...c, progress: 5 }, false);
      j.update({ ...c, progress: 5, state: 'running', accepted: true, updated_at: 1200 }, true);
      j.update({ ...c, progress: 5, state: 'running', accepted: true, updated_at: 1200, position: 4.5 }, false);
      reopen();
      expect(j.get(c.command_id)).toMatchObject({ progress: 5, state: 'running', accepted: true, updated_at: 1200, position: 4.5 });
    });

    it('a command that ended (read from the file, not kept in memory) can still be updated: a late note lands with its fields', () => {
      const c = full({ state: 'timeout', terminal_at: 2000, error_code: 'TIMEOUT' });
      j.insert(c);
      reopen();
      const late = { ...c, updated_at: 2500, device_state: { up: 99, relays: [] } };
      j.update(late, false, 'late result from device ignored: completed');
      expect(j.get(c.command_id)).toStrictEqual(late);
      expect(j.events(c.command_id).at(-1)).toStrictEqual({ at: 2500, state: 'timeout', note: 'late result from device ignored: completed' });
      reopen();
      expect(j.get(c.command_id)).toStrictEqual(late);
    });

    it('a command inserted already past submitted has exactly the steps given as its history', () => {
      const c = blank({ state: 'sent', updated_at: 1000 });
      j.insert(c, null, [
        { at: 1000, state: 'submitted', note: null },
        { at: 1000, state: 'sent', note: 'deadline 178 ms' },
      ]);
      expect(j.events(c.command_id)).toStrictEqual([
        { at: 1000, state: 'submitted', note: null },
        { at: 1000, state: 'sent', note: 'deadline 178 ms' },
      ]);
    });
  });

  describe('lookups the host core decides with', () => {
    it('byRequest: the command that could have reached the device wins over DEVICE_OFFLINE rejections of the same request_id', () => {
      const off1 = blank({ request_id: 'r', state: 'rejected', error_code: 'DEVICE_OFFLINE', terminal_at: 1000 });
      const ran = blank({ request_id: 'r', state: 'completed', terminal_at: 1100 });
      const off2 = blank({ request_id: 'r', state: 'rejected', error_code: 'DEVICE_OFFLINE', terminal_at: 1200 });
      j.insert(off1);
      j.insert(ran);
      j.insert(off2);
      expect(j.byRequest('rig1', 'r')!.command_id).toBe(ran.command_id);
      expect(j.byRequest('rig2', 'r')).toBeUndefined();
    });

    it("the host's refusals of the moment (DEVICE_OFFLINE, BUSY, STATE_READ_REQUIRED, nothing sent) leave a request_id free; anything else holds it", () => {
      const refusal = (code: string, o: Partial<CommandRecord> = {}) => blank({ request_id: 'r', state: 'rejected', error_code: code as CommandRecord['error_code'], terminal_at: 1000, ...o });
      // The list is the protocol's: the error codes marked `moment` in its table.
      expect(momentCodes()).toEqual(['DEVICE_OFFLINE', 'BUSY', 'STATE_READ_REQUIRED']);
      const moments = momentCodes().map((code) => refusal(code));
      for (const c of moments) {
        expect(momentRefusal(c)).toBe(true);
        j.insert(c);
      }
      expect(j.byRequest('rig1', 'r')!.command_id).toBe(moments[2].command_id);
      const ran = blank({ request_id: 'r', state: 'sent', sent_at: 1100 });
      j.insert(ran);
      expect(j.byRequest('rig1', 'r')!.command_id).toBe(ran.command_id);
      expect(() => j.insert(blank({ request_id: 'r', state: 'sent', sent_at: 1200 }))).toThrow(`journal: request r of rig1 is already open as ${ran.command_id}`);
      // the same codes answered by the device (sent), another code, or another state: they hold the request_id
      const held = [
        refusal('BUSY', { request_id: 'b', sent_at: 1100 }),
        refusal('NOT_HOMED', { request_id: 'n' }),
        refusal('INVALID_ARGS', { request_id: 'i' }),
        blank({ request_id: 'f', state: 'failed', error_code: 'DEVICE_OFFLINE' as CommandRecord['error_code'], terminal_at: 1000 }),
      ];
      for (const c of held) {
        expect(momentRefusal(c)).toBe(false);
        j.insert(c);
        expect(() => j.insert(blank({ request_id: c.request_id, state: 'sent', sent_at: 1200 }))).toThrow(/UNIQUE/);
        expect(j.byRequest('rig1', c.request_id)!.command_id).toBe(c.command_id);
      }
    });

    it('byRequest: with only DEVICE_OFFLINE rejections, the newest of them', () => {
      const off1 = blank({ request_id: 'r', state: 'rejected', error_code: 'DEVICE_OFFLINE', terminal_at: 1000 });
      const off2 = blank({ request_id: 'r', state: 'rejected', error_code: 'DEVICE_OFFLINE', terminal_at: 1200 });
      j.insert(off1);
      j.insert(off2);
      expect(j.byRequest('rig1', 'r')!.command_id).toBe(off2.command_id);
    });

    it('byRequest never mixes up device and request ids that run together the same ("rig1" + "x" is not "rig" + "1x")', () => {
      const c = blank({ device_id: 'rig1', request_id: 'x', state: 'sent' });
      j.insert(c);
      expect(j.byRequest('rig', '1x')).toBeUndefined();
      expect(j.byRequest('rig1', 'x')!.command_id).toBe(c.command_id);
    });

    it('byRequest finds an open command by its request_id on its device only', () => {
      const c = blank({ request_id: 'r', state: 'sent', device_id: 'rig2' });
      j.insert(c);
      expect(j.byRequest('rig2', 'r')!.command_id).toBe(c.command_id);
      expect(j.byRequest('rig1', 'r')).toBeUndefined();
    });

    it('lastTerminal: the ended motions of an action on a device, newest first; refusals and open ones are not among them', () => {
      const a = blank({ action: 'stepper.move', state: 'completed', terminal_at: 3000 });
      const b = blank({ action: 'stepper.move', state: 'failed', terminal_at: 5000 });
      const refused = blank({ action: 'stepper.move', state: 'rejected', terminal_at: 6000 });
      const open = blank({ action: 'stepper.move', state: 'running' });
      const other = blank({ action: 'stepper.home', state: 'failed', terminal_at: 7000 });
      const elsewhere = blank({ action: 'stepper.move', device_id: 'rig2', state: 'failed', terminal_at: 8000 });
      for (const c of [a, b, refused, open, other, elsewhere]) j.insert(c);
      expect(j.lastTerminal('rig1', 'stepper.move').map((c) => c.command_id)).toEqual([b.command_id, a.command_id]);
    });

    it('open: the commands not yet terminal, oldest first', () => {
      const late = blank({ state: 'sent', submitted_at: 3000 });
      const early = blank({ state: 'running', submitted_at: 2000 });
      j.insert(late);
      j.insert(early);
      j.insert(blank({ state: 'completed', terminal_at: 2500 }));
      expect(j.open().map((c) => c.command_id)).toEqual([early.command_id, late.command_id]);
      j.update({ ...early, state: 'completed', terminal_at: 4000 }, true);
      expect(j.open().map((c) => c.command_id)).toEqual([late.command_id]);
      reopen();
      expect(j.open().map((c) => c.command_id)).toEqual([late.command_id]);
    });
  });

  describe('recent: the filters of list_commands', () => {
    let ids: Record<string, string>;
    beforeEach(() => {
      const cs = {
        a: blank({ device_id: 'rig1', action: 'relay.set', state: 'completed', terminal_at: 1100, submitted_at: 1000 }),
        b: blank({ device_id: 'rig2', action: 'stepper.move', state: 'failed', terminal_at: 2100, submitted_at: 2000 }),
        c: blank({ device_id: 'rig1', action: 'stepper.home', state: 'running', submitted_at: 3000 }),
        d: blank({ device_id: 'rig1', action: 'relay.set', state: 'timeout', terminal_at: 4100, submitted_at: 4000 }),
      };
      for (const c of Object.values(cs)) j.insert(c);
      ids = Object.fromEntries(Object.entries(cs).map(([k, c]) => [c.command_id, k]));
    });
    const names = (cs: CommandRecord[]) => cs.map((c) => ids[c.command_id]).join('');

    it('newest first, at most 50 unless told', () => {
      expect(names(j.recent())).toBe('dcba');
      expect(names(j.recent({ limit: 2 }))).toBe('dc');
    });
    it('by device, states, actions, open', () => {
      expect(names(j.recent({ device_id: 'rig1' }))).toBe('dca');
      expect(names(j.recent({ states: ['failed', 'timeout'] }))).toBe('db');
      expect(names(j.recent({ actions: ['relay.set', 'stepper.home'] }))).toBe('dca');
      expect(names(j.recent({ open: true }))).toBe('c');
      expect(names(j.recent({ states: [], actions: [] }))).toBe('dcba');
    });
    it('by submission time, both bounds inclusive', () => {
      expect(names(j.recent({ since: 2000 }))).toBe('dcb');
      expect(names(j.recent({ until: 3000 }))).toBe('cba');
      expect(names(j.recent({ since: 2000, until: 3000, device_id: 'rig1' }))).toBe('c');
    });
    it('the default limit is 50', () => {
      for (let i = 0; i < 60; i++) j.insert(blank({ state: 'completed', terminal_at: 5000, submitted_at: 5000 + i }));
      expect(j.recent()).toHaveLength(50);
    });
  });

  describe('devices', () => {
    it('provisioned, re-keyed, seen, listed by id, and removed; their commands stay as history', () => {
      j.provision('rig2', 's'.repeat(64), board, true);
      j.provision('rig1', 'a'.repeat(64), board);
      expect(j.device('rig2')).toStrictEqual({ device_id: 'rig2', secret: 's'.repeat(64), board, last_boot: null, last_seen: null, simulated: true });
      j.provision('rig2', 'k'.repeat(64), { ...board, name: 'renamed' });
      j.seen('rig2', 'boot9', 12345);
      expect(j.device('rig2')).toStrictEqual({ device_id: 'rig2', secret: 'k'.repeat(64), board: { ...board, name: 'renamed' }, last_boot: 'boot9', last_seen: 12345, simulated: false });
      expect(j.devices().map((d) => d.device_id)).toEqual(['rig1', 'rig2']);
      const c = blank({ device_id: 'rig2', state: 'completed', terminal_at: 1000 });
      j.insert(c);
      expect(j.removeDevice('rig2')).toStrictEqual({ ok: true });
      expect(j.device('rig2')).toBeUndefined();
      expect(j.get(c.command_id)!.device_id).toBe('rig2');
    });

    it('removing an unknown device, or one with open commands, is refused saying why', () => {
      expect(j.removeDevice('rig1')).toStrictEqual({ ok: false, reason: 'no device "rig1" is provisioned (known: none)' });
      j.provision('rig1', 'a'.repeat(64), board);
      j.provision('rig3', 'a'.repeat(64), board);
      expect(j.removeDevice('rig2')).toStrictEqual({ ok: false, reason: 'no device "rig2" is provisioned (known: rig1, rig3)' });
      const c = blank({ state: 'sent' });
      j.insert(c);
      expect(j.removeDevice('rig1')).toStrictEqual({ ok: false, reason: `device rig1 has 1 open command(s) (${c.command_id} relay.set sent); wait for them to end or cancel them first` });
      const c2 = blank({ state: 'running', action: 'stepper.home', args: { axis: 'x' } });
      j.insert(c2);
      expect(j.removeDevice('rig1')).toStrictEqual({
        ok: false,
        reason: `device rig1 has 2 open command(s) (${c2.command_id} stepper.home running, ${c.command_id} relay.set sent); wait for them to end or cancel them first`,
      });
      expect(j.device('rig1')).toBeDefined();
    });

    it('device events: journaled once per boot and id, listed newest first up to a limit', () => {
      const e = { device_id: 'rig1', boot_id: 'b1', event_id: 'e1', at: 100, kind: 'max_on', ch: 2, msg: 'off', device_state: STATE };
      expect(j.deviceEvent(e)).toBe(true);
      expect(j.deviceEvent({ ...e, msg: 'again' })).toBe(false);
      expect(j.deviceEvent({ ...e, boot_id: 'b2', at: 200, ch: null, kind: 'estop' })).toBe(true);
      expect(j.deviceEvents('rig1', 10)).toStrictEqual([
        { ...e, boot_id: 'b2', at: 200, ch: null, kind: 'estop' },
        e,
      ]);
      expect(j.deviceEvents('rig1', 1)).toHaveLength(1);
      expect(j.deviceEvents('rig2', 10)).toEqual([]);
    });
  });

  describe('retention', () => {
    it('prunes terminal commands older than the age limit into tombstones, never an open one, and says how many went', () => {
      const old = blank({ state: 'completed', terminal_at: 1000, submitted_at: 900 });
      const young = blank({ state: 'completed', terminal_at: 40 * DAY });
      const openOld = blank({ state: 'sent', submitted_at: 1 });
      for (const c of [old, young, openOld]) j.insert(c);
      const now = 31 * DAY + 1000 + 1;
      expect(j.prune({ maxAgeMs: 30 * DAY, maxCommands: 100 }, now)).toBe(1);
      expect(j.get(old.command_id)).toBeUndefined();
      expect(j.events(old.command_id)).toEqual([]);
      expect(j.pruned(old.command_id)).toStrictEqual({ command_id: old.command_id, device_id: 'rig1', request_id: old.request_id, action: 'relay.set', state: 'completed', submitted_at: 900, terminal_at: 1000, pruned_at: now });
      expect(j.prunedByRequest('rig1', old.request_id)!.command_id).toBe(old.command_id);
      expect(j.prunedByRequest('rig2', old.request_id)).toBeUndefined();
      expect(j.get(young.command_id)).toBeDefined();
      expect(j.get(openOld.command_id)).toBeDefined();
      expect(j.prune({ maxAgeMs: 30 * DAY, maxCommands: 100 }, now)).toBe(0);
    });

    it('a command exactly at the age limit stays', () => {
      const c = blank({ state: 'completed', terminal_at: 1000 });
      j.insert(c);
      expect(j.prune({ maxAgeMs: 500, maxCommands: 100 }, 1500)).toBe(0);
      expect(j.prune({ maxAgeMs: 500, maxCommands: 100 }, 1501)).toBe(1);
    });

    it('beyond the count limit, the oldest terminal commands go first; open ones do not count', () => {
      const cs = [3000, 1000, 2000, 4000].map((t) => blank({ state: 'completed', terminal_at: t }));
      for (const c of cs) j.insert(c);
      j.insert(blank({ state: 'sent' }));
      expect(j.prune({ maxAgeMs: 365 * DAY, maxCommands: 2 }, 5000)).toBe(2);
      expect(j.recent({ states: ['completed'] }).map((c) => c.terminal_at).sort()).toEqual([3000, 4000]);
      expect(j.open()).toHaveLength(1);
      expect(j.prune({ maxAgeMs: 365 * DAY, maxCommands: 2 }, 5000)).toBe(0);
    });
  });

  describe('a new command starts blank', () => {
    it('submitted, not accepted, executed nor verified, and nothing else known yet', () => {
      expect(blankCommand()).toStrictEqual({
        command_id: '', device_id: '', request_id: '', action: '', args: {}, state: 'submitted', accepted: false, executed: false, verified: false,
        evidence: null, error_code: null, detail: null, boot_id: null, submitted_at: 0, updated_at: 0, terminal_at: null, deadline_at: null,
        estimated_ms: 0, progress: null, position: null, device_state: null, device_state_at: null, sends: 0, sent_at: null,
      });
    });
  });
});
