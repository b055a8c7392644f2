import { Global, Module, type DynamicModule } from '@nestjs/common';
import { ENROLMENT_PIN, type EnrolmentPin } from './enrolment-pin.js';

/**
 * What the served certificate tells the rest of the coordinator: the pin new enrolment tokens carry.
 * The certificate itself is loaded and watched by the server, before Nest starts.
 */
@Global()
@Module({})
export class TlsModule {
  static with(pin: EnrolmentPin = () => undefined): DynamicModule {
    const providers = [{ provide: ENROLMENT_PIN, useValue: pin }];
    return { module: TlsModule, providers, exports: providers.map((p) => p.provide) };
  }
}
