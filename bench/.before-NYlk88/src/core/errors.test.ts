import { describe, expect, test } from 'bun:test';
import { ConfigError, OptionError, optionErrors, PdlinkError } from './errors.ts';

describe('PdlinkError', () => {
  test('carries a stable code, its status and wire type', () => {
    const err = new PdlinkError('unprocessable', 'x');
    expect(err.status).toBe(422);
    expect(err.errorType).toBe('UnprocessableEntity');
  });
});

describe('ConfigError', () => {
  test('is the exit-2 error of every command, with the message as given', () => {
    const err = new ConfigError('--port: must be an integer port, got "x"');
    expect(err.exitCode).toBe(2);
    expect(err.name).toBe('ConfigError');
    expect(err.message).toBe('--port: must be an integer port, got "x"');
  });
});

describe('optionErrors', () => {
  test('word every option error alike, naming the option first', () => {
    expect(optionErrors.positiveInteger('maxThreads').message).toBe('maxThreads must be a positive integer');
    expect(optionErrors.positiveNumber('retry.baseMs').message).toBe('retry.baseMs must be a positive number');
    expect(optionErrors.nonNegativeNumber('sliceMs').message).toBe('sliceMs must be a non-negative number');
    expect(optionErrors.integerIn('linkTimeoutMs', 1, '2^31 - 1').message).toBe('linkTimeoutMs must be an integer in [1, 2^31 - 1]');
    expect(optionErrors.notBelow('retry.capMs', 'retry.baseMs').message).toBe('retry.capMs must be a number ≥ retry.baseMs');
    expect(optionErrors.empty('devices', 'local device').message).toBe('devices must name at least one local device');
  });

  test('are RangeErrors, so callers that catch those keep working', () => {
    const err = optionErrors.positiveInteger('threads');
    expect(err).toBeInstanceOf(OptionError);
    expect(err).toBeInstanceOf(RangeError);
    expect(err.name).toBe('OptionError');
  });
});
