import { describe, expect, test } from 'bun:test';
import { AbortScope, offAbort, onAbort } from './abort-scope.ts';

describe('AbortScope', () => {
  test('abort runs every listener once, in order, and keeps the first reason', () => {
    const scope = new AbortScope();
    const heard: string[] = [];
    scope.add(() => heard.push('a'));
    scope.add(() => heard.push('b'));
    expect(scope.aborted).toBe(false);
    scope.abort('first');
    scope.abort('second');
    expect(scope.aborted).toBe(true);
    expect(scope.reason).toBe('first');
    expect(heard).toEqual(['a', 'b']);
  });

  test('a removed listener is not called; removing an unknown one changes nothing', () => {
    const scope = new AbortScope();
    const heard: string[] = [];
    const a = (): number => heard.push('a');
    scope.add(a);
    scope.add(() => heard.push('b'));
    scope.remove(a);
    scope.remove(() => {});
    scope.abort('x');
    expect(heard).toEqual(['b']);
  });

  test('a listener added after the abort is never called', () => {
    const scope = new AbortScope();
    scope.abort('gone');
    let called = false;
    scope.add(() => (called = true));
    expect(called).toBe(false);
  });

  test('signal aborts with the scope, with its reason, and is made once', () => {
    const scope = new AbortScope();
    const signal = scope.signal;
    expect(scope.signal).toBe(signal);
    expect(signal.aborted).toBe(false);
    scope.abort('infer_timeout');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('infer_timeout');
  });

  test('signal of a scope already aborted is born aborted', () => {
    const scope = new AbortScope();
    scope.abort('client_abort');
    expect(scope.signal.aborted).toBe(true);
    expect(scope.signal.reason).toBe('client_abort');
  });
});

describe('onAbort and offAbort', () => {
  test('listen alike to a scope and to an AbortSignal, once, and forget alike', () => {
    const scope = new AbortScope();
    const controller = new AbortController();
    const heard: string[] = [];
    const fromScope = (): number => heard.push('scope');
    const fromSignal = (): number => heard.push('signal');
    const forgotten = (): number => heard.push('forgotten');
    onAbort(scope, fromScope);
    onAbort(controller.signal, fromSignal);
    onAbort(scope, forgotten);
    onAbort(controller.signal, forgotten);
    offAbort(scope, forgotten);
    offAbort(controller.signal, forgotten);
    scope.abort('x');
    controller.abort('y');
    controller.signal.dispatchEvent(new Event('abort'));
    expect(heard).toEqual(['scope', 'signal']);
  });
});
