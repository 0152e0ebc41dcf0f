import { z } from "zod";
import { capnpString } from "../runtime/capnp-string.js";
import { bindingName, type BindingType } from "./binding-type.js";

export interface PlainTextBinding {
  type: "plain_text";
  name: string;
  text: string;
}

/** A var: text the script reads from `env`, written into the config (it is not a secret). */
export const plainText: BindingType<PlainTextBinding> = {
  type: "plain_text",
  schema: z.object({ type: z.literal("plain_text"), name: bindingName(), text: z.string() }),
  workerd: (b) => `text = ${capnpString(b.text)}`,
};
